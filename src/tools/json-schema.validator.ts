import Ajv, { type ErrorObject, type Options, type ValidateFunction } from 'ajv';
import Ajv2019 from 'ajv/dist/2019';
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { findForbiddenKey } from '../common/util/forbidden-keys';

/**
 * JSON-Schema validation of tool arguments with ajv.
 *
 * - `useDefaults: true` fills in the schema's defaults (the tool and the canonical signature see them);
 * - `coerceTypes: false`: "10" is not 10; the model gets told and repairs its call;
 * - `allErrors: true`: every problem in one answer, so one repair round is enough;
 * - `strict: false`: MCP servers publish schemas with unknown keywords and loose types.
 *
 * A schema is compiled once and cached under a key (the tool's definition hash). A schema
 * ajv refuses is cached as a failure too, and reported as `schema_error` instead of throwing.
 */
export type ArgsValidation =
  | { ok: true; value: Record<string, unknown> }
  | { ok: false; reason: 'invalid'; value: Record<string, unknown>; errors: string[] }
  | { ok: false; reason: 'schema_error'; message: string };

type Compiled = { ok: true; fn: ValidateFunction; ajv: Ajv } | { ok: false; message: string };

const AJV_OPTIONS: Options = {
  useDefaults: true,
  coerceTypes: false,
  allErrors: true,
  strict: false,
  // MCP schemas often carry an `$id`; adding each to ajv's registry would make a second
  // schema with the same `$id` fail to compile.
  addUsedSchema: false,
  // draft-2019/2020 `unevaluated*` and `$dynamicRef` need no special treatment here
};

export class JsonSchemaValidator {
  /** Distinct schemas kept compiled; beyond this the oldest is dropped (MCP servers may re-list often). */
  static readonly MAX_CACHED = 500;

  private readonly cache = new Map<string, Compiled>();
  private instances?: { draft7: Ajv; draft2019: Ajv; draft2020: Ajv };
  /** how many times a schema was actually compiled (tests check the cache with it) */
  compilations = 0;

  /**
   * Validates `data` in place (defaults are written into it) against `schema`.
   * Pass a copy if the caller's object must stay untouched.
   */
  validate(schema: unknown, data: Record<string, unknown>, cacheKey: string): ArgsValidation {
    const compiled = this.compile(schema, cacheKey);
    if (!compiled.ok) return { ok: false, reason: 'schema_error', message: compiled.message };
    const forbidden = findForbiddenKey(data);
    if (forbidden) return { ok: false, reason: 'invalid', value: data, errors: [`argument key "${forbidden}" is not allowed (__proto__, constructor and prototype never are)`] };
    let valid: unknown;
    try {
      valid = compiled.fn(data);
    } catch (err) {
      return { ok: false, reason: 'schema_error', message: `validating against the schema failed: ${(err as Error)?.message ?? String(err)}` };
    }
    if (valid === true) return { ok: true, value: data };
    return { ok: false, reason: 'invalid', value: data, errors: formatErrors(compiled.fn.errors ?? []) };
  }

  /** Compiles (or fetches from the cache) the validator of a schema. Never throws. */
  compile(schema: unknown, cacheKey: string): Compiled {
    const hit = this.cache.get(cacheKey);
    if (hit) {
      // refresh recency
      this.cache.delete(cacheKey);
      this.cache.set(cacheKey, hit);
      return hit;
    }
    const compiled = this.compileFresh(schema);
    this.cache.set(cacheKey, compiled);
    if (this.cache.size > JsonSchemaValidator.MAX_CACHED) {
      const [oldestKey, oldest] = this.cache.entries().next().value as [string, Compiled];
      this.cache.delete(oldestKey);
      if (oldest.ok) oldest.ajv.removeSchema(oldest.fn.schema as object);
    }
    return compiled;
  }

  private compileFresh(schema: unknown): Compiled {
    this.compilations++;
    if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) {
      return { ok: false, message: 'the parameter schema is not a JSON object' };
    }
    const s = schema as Record<string, unknown>;
    if (s.$async === true) return { ok: false, message: 'asynchronous ($async) schemas are not supported' };
    const { ajv, schema: prepared } = this.pick(s);
    try {
      const fn = ajv.compile(prepared);
      return { ok: true, fn, ajv };
    } catch (err) {
      return { ok: false, message: `the parameter schema does not compile: ${(err as Error)?.message ?? String(err)}` };
    }
  }

  /** Chooses the dialect from `$schema`; anything else (draft-04/06/07, none) is read as draft-07. */
  private pick(schema: Record<string, unknown>): { ajv: Ajv; schema: Record<string, unknown> } {
    const inst = (this.instances ??= {
      draft7: withFormats(new Ajv(AJV_OPTIONS)),
      draft2019: withFormats(new Ajv2019(AJV_OPTIONS)),
      draft2020: withFormats(new Ajv2020(AJV_OPTIONS)),
    });
    const dialect = typeof schema.$schema === 'string' ? schema.$schema : '';
    if (dialect.includes('2020-12')) return { ajv: inst.draft2020, schema };
    if (dialect.includes('2019-09')) return { ajv: inst.draft2019, schema };
    if (dialect === '') return { ajv: inst.draft7, schema };
    // an unknown `$schema` makes ajv throw "no schema with key or ref"; read it as draft-07
    const { $schema: _ignored, ...rest } = schema;
    return { ajv: inst.draft7, schema: rest };
  }
}

function withFormats<T extends Ajv>(ajv: T): T {
  addFormats(ajv);
  return ajv;
}

/** ajv errors as short lines a model can act on: `/maxBytes must be integer`. */
export function formatErrors(errors: readonly ErrorObject[]): string[] {
  return errors.map((e) => {
    const where = e.instancePath === '' ? '(root)' : e.instancePath;
    const p = e.params as Record<string, unknown>;
    let extra = '';
    if (e.keyword === 'additionalProperties' && p.additionalProperty !== undefined) extra = ` (unexpected property "${String(p.additionalProperty)}")`;
    else if (e.keyword === 'enum' && Array.isArray(p.allowedValues)) extra = ` (allowed: ${p.allowedValues.map((v) => JSON.stringify(v)).join(', ')})`;
    else if (e.keyword === 'const' && 'allowedValue' in p) extra = ` (${JSON.stringify(p.allowedValue)})`;
    return `${where} ${e.message ?? e.keyword}${extra}`;
  });
}

/**
 * Names of properties marked `"x-secret": true` anywhere in a schema (nested objects, array
 * items, combinators). Traces mask these names wherever they occur: masking a same-named
 * harmless field too is the safe mistake.
 */
export function secretPropertyNames(schema: unknown): Set<string> {
  const names = new Set<string>();
  const seen = new Set<object>();
  const walk = (node: unknown, depth: number): void => {
    if (node === null || typeof node !== 'object' || depth > 32 || seen.has(node)) return;
    seen.add(node);
    if (Array.isArray(node)) {
      for (const x of node) walk(x, depth + 1);
      return;
    }
    const n = node as Record<string, unknown>;
    for (const key of ['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas']) {
      const props = n[key];
      if (props && typeof props === 'object' && !Array.isArray(props)) {
        for (const [name, sub] of Object.entries(props as Record<string, unknown>)) {
          if (key === 'properties' && sub && typeof sub === 'object' && (sub as Record<string, unknown>)['x-secret'] === true) names.add(name);
          walk(sub, depth + 1);
        }
      }
    }
    for (const key of ['items', 'prefixItems', 'additionalProperties', 'allOf', 'anyOf', 'oneOf', 'not', 'if', 'then', 'else', 'contains']) {
      walk(n[key], depth + 1);
    }
  };
  walk(schema, 0);
  return names;
}
