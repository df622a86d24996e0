import { BadRequestException, Injectable, ParseUUIDPipe, ValidationPipe, type ArgumentMetadata, type ValidationPipeOptions } from '@nestjs/common';
import { getMetadataStorage, type ValidationError } from 'class-validator';

/** One bad field of a request: where it is (`options.multitask`, `messages[0].role`) and what to do about it. */
export interface FieldError {
  field: string;
  message: string;
}

/**
 * The constraints that say what kind of value a field takes, most telling first. When one of
 * them fails, its message is the field's message (a number sent for a string also fails the
 * string's length rules, which would only mislead); when the field is missing, it says what to send.
 */
const KIND_CONSTRAINTS = [
  'isArray',
  'isObject',
  'nestedValidation',
  'isString',
  'isInt',
  'isNumber',
  'isBoolean',
  'isIn',
  'isEnum',
  'isUuid',
  'isUrl',
  'isRFC3339',
  'isISO8601',
  'isDateString',
];

/**
 * class-validator's errors as one message per bad field (issue #42): a missing field says it is
 * required, a field of the wrong kind says which kind, an unknown field says it is not allowed
 * and names the fields that are, and a nested field is named by its whole path, once.
 * The errors need their `target` (ValidationPipe's `validationError: {target: true}`) for the
 * accepted fields of an unknown one; without it the list is left out.
 */
export function fieldErrors(errors: readonly ValidationError[], parent = ''): FieldError[] {
  return errors.flatMap((e) => {
    const field = pathOf(parent, e.property);
    const own = e.constraints && Object.keys(e.constraints).length > 0 ? [{ field, message: messageOf(e, field) }] : [];
    return [...own, ...fieldErrors(e.children ?? [], field)];
  });
}

/** `options` + `multitask` → `options.multitask`; `messages` + `0` → `messages[0]`. */
function pathOf(parent: string, property: string): string {
  if (!parent) return property;
  return /^\d+$/.test(property) ? `${parent}[${property}]` : `${parent}.${property}`;
}

function messageOf(e: ValidationError, field: string): string {
  const constraints = e.constraints ?? {};
  if ('whitelistValidation' in constraints) return `${field} is not allowed (unknown field${acceptedFields(e.target)})`;
  // class-validator lists a property's constraints last decorator first: reversed, in source order
  const keys = Object.keys(constraints).reverse();
  const kind = KIND_CONSTRAINTS.find((k) => k in constraints);
  if (e.value === undefined) {
    const expected = kind ? expectation(constraints[kind], kind, e.property, field) : undefined;
    return `${field} is required${expected ? ` (${expected})` : ''}`;
  }
  const key = kind ?? keys.find((k) => k !== 'isDefined') ?? keys[0];
  if (key === 'nestedValidation') return `${field} must be an object`;
  return withField(constraints[key], e.property, field);
}

/** "content must be a string" → "a string"; undefined when the message says no kind. */
function expectation(message: string, key: string, property: string, field: string): string | undefined {
  if (key === 'nestedValidation') return 'an object';
  const m = /\bmust be (.+)$/.exec(withField(message, property, field));
  return m?.[1];
}

/** The message naming the field by its whole path, once, whatever the validator's message said. */
function withField(message: string, property: string, field: string): string {
  if (wordIn(message, field)) return message;
  if (field !== property && wordIn(message, property)) return message.replace(new RegExp(`(^|[^\\w.])${escape(property)}(?![\\w])`), (_, lead: string) => `${lead}${field}`);
  return `${field}: ${message}`;
}

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const wordIn = (message: string, word: string) => new RegExp(`(^|[^\\w.])${escape(word)}(?![\\w])`).test(message);

/** "; accepted: a, b, c": the fields the class of the object with the unknown field validates. */
function acceptedFields(target: object | undefined): string {
  if (!target || typeof target !== 'object') return '';
  const names = [...new Set(getMetadataStorage().getTargetValidationMetadatas(target.constructor, '', true, false).map((m) => m.propertyName))];
  return names.length > 0 ? `; accepted: ${names.join(', ')}` : '';
}

/**
 * The 400 of bad input, in the error body every route answers with (docs/API.md, "Errors"):
 * `message` one string per bad field, and *(added)* `fields`, the same messages with the path of
 * each. `error` is `Bad Request`, or a code of its own (see {@link sharedCode}).
 */
export function badFields(fields: readonly FieldError[], error = 'Bad Request'): BadRequestException {
  return new BadRequestException({ statusCode: 400, error, message: fields.map((f) => f.message), fields });
}

/**
 * The documented code of a bad field, when every bad field has that one: a constraint declares
 * it as its `context: {code}` (`mode`'s `unknown_mode`). With other bad fields as well, the
 * answer stays a `Bad Request` listing them all.
 */
export function sharedCode(errors: readonly ValidationError[]): string | undefined {
  const failing = (list: readonly ValidationError[]): ValidationError[] =>
    list.flatMap((e) => [...(e.constraints && Object.keys(e.constraints).length > 0 ? [e] : []), ...failing(e.children ?? [])]);
  const codes = failing(errors).map((e) => {
    const found = Object.keys(e.constraints!).map((k) => (e.contexts?.[k] as { code?: unknown } | undefined)?.code);
    return found.length > 0 && found.every((c) => typeof c === 'string' && c === found[0]) ? (found[0] as string) : undefined;
  });
  return codes.length > 0 && codes.every((c) => c !== undefined && c === codes[0]) ? codes[0] : undefined;
}

/**
 * The ValidationPipe of every route (global, and where a route sets its own): unknown fields
 * refused, bodies turned into their DTO class, and {@link fieldErrors}' messages. A body that is
 * not a JSON object (an array) is refused as such rather than validated as an empty object.
 */
@Injectable()
export class FieldValidationPipe extends ValidationPipe {
  constructor(options: Omit<ValidationPipeOptions, 'exceptionFactory' | 'validationError'> = {}) {
    super({
      whitelist: true,
      forbidNonWhitelisted: true,
      transform: true,
      transformOptions: { enableImplicitConversion: false },
      ...options,
      validationError: { target: true, value: true },
      exceptionFactory: (errors: ValidationError[]) => badFields(fieldErrors(errors), sharedCode(errors)),
    });
  }

  override async transform(value: unknown, metadata: ArgumentMetadata): Promise<unknown> {
    if (metadata.type === 'body' && value !== undefined && this.toValidate(metadata) && (value === null || typeof value !== 'object' || Array.isArray(value))) {
      throw new BadRequestException(notAnObject(value));
    }
    return super.transform(value, metadata);
  }
}

/** "The request body must be a JSON object (got an array)". */
export function notAnObject(value: unknown): string {
  const got = Array.isArray(value) ? 'an array' : value === null ? 'null' : typeof value === 'string' ? 'a string' : typeof value === 'number' ? 'a number' : typeof value === 'boolean' ? String(value) : typeof value;
  return `The request body must be a JSON object (got ${got})`;
}

/** The UUID of the examples, shown in the message of a bad one. */
const SAMPLE_UUID = '0f8fad5b-d9cb-469f-a165-70867728950e';

/**
 * Nest's ParseUUIDPipe, whose 400 names the parameter and shows what was sent
 * (`requestId must be a UUID such as 0f8f… (got "abc")`) instead of `Validation failed (uuid is expected)`.
 */
@Injectable()
export class UuidParamPipe extends ParseUUIDPipe {
  override async transform(value: unknown, metadata: ArgumentMetadata): Promise<string> {
    try {
      return (await super.transform(value, metadata)) as string;
    } catch (err) {
      if (!(err instanceof BadRequestException)) throw err;
      const field = metadata.data || 'id';
      const sent = typeof value === 'string' && value.length > 80 ? `${value.slice(0, 80)}…` : value;
      throw badFields([{ field, message: `${field} must be a UUID such as ${SAMPLE_UUID} (got ${JSON.stringify(sent)})` }]);
    }
  }
}
