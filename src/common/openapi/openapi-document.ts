import type { INestApplication } from '@nestjs/common';
import { DocumentBuilder, getSchemaPath, SwaggerModule, type OpenAPIObject } from '@nestjs/swagger';
import { ErrorResponseDto } from '../errors/error-response.dto';
import { mappedRoutes, toOpenApiPath } from '../auth/route-inventory';
import { ERROR_EXAMPLES, OPERATION_ERRORS, STATUS_EXAMPLES } from './error-examples';
import { PARAMETER_EXAMPLES, REQUEST_EXAMPLE_NOTES, REQUEST_EXAMPLES, STREAM_EXAMPLES } from './request-examples';
import { addSseEventUnions } from '../sse/sse-event-union';

/** The security scheme Swagger UI's Authorize button fills in (API_KEYS). */
export const BEARER_SCHEME = 'bearer';

type OperationObject = NonNullable<OpenAPIObject['paths'][string]['get']>;
type ResponseObject = Exclude<OperationObject['responses'][string], { $ref: string } | undefined>;
type ExampleObject = { summary: string; value: unknown };

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;

/**
 * The OpenAPI document `/docs-json` serves and `npm run openapi` writes to docs/openapi.json.
 * Built from the controllers' decorators, then completed in one place for what every route
 * shares: the bearer requirement (none on /api/health), a 401 and a 429 on every keyed route,
 * the 400 wherever input is validated, the 413 wherever a body is taken, the error body on
 * every 4xx/5xx answer with examples per status and code (error-examples.ts), and the request
 * and stream examples Swagger UI's "Try it out" starts from (request-examples.ts). Must not depend on configuration or time, so that the
 * committed file and the served document can be compared.
 */
export function buildOpenApiDocument(app: INestApplication): OpenAPIObject {
  const config = new DocumentBuilder()
    .setTitle('Orion')
    .setDescription(
      'Runs LLM tool-calling turns for chat products and keeps them under control. ' +
        'The contract in prose, with every SSE event and the run-control rules: docs/API.md in the repository. ' +
        'When the service runs with API_KEYS set, every /api route but the health probes needs `Authorization: Bearer <key>` (use Authorize).',
    )
    .setVersion('0.1.0')
    .addBearerAuth({ type: 'http', scheme: 'bearer', bearerFormat: 'opaque key', description: 'an API key: one of API_KEYS, or a database key (POST /api/admin/keys, npm run keys)' }, BEARER_SCHEME)
    .addSecurityRequirements(BEARER_SCHEME)
    .build();
  const doc = SwaggerModule.createDocument(app, config, { extraModels: [ErrorResponseDto] });
  // the routes marked @Public(), the same metadata the ApiKeyGuard reads
  const publicOps = new Set(mappedRoutes(app).filter((r) => r.isPublic).map((r) => `${r.method.toLowerCase()} ${toOpenApiPath(r.path)}`));
  const errorBody = { 'application/json': { schema: { $ref: getSchemaPath(ErrorResponseDto) } } };
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const method of METHODS) {
      const op = item[method];
      if (!op) continue;
      const id = op.operationId ?? '';
      const isPublic = publicOps.has(`${method} ${path}`);
      if (isPublic) op.security = [];
      else op.responses['401'] ??= { description: 'API_KEYS is set and the request has no valid key' };
      // the global FieldValidationPipe (and UuidParamPipe) refuse bad input on every route that takes any
      if ((op.requestBody || op.parameters?.length) && !op.responses['400']) op.responses['400'] = { description: 'invalid parameters or body (nothing changes)' };
      // the body checks (RequestBodyGuard) apply to every body, also one sent where none is
      // expected (a cancel, a delete); the key throttler to every keyed route
      if (op.requestBody || (method !== 'get' && method !== 'head')) {
        op.responses['413'] ??= { description: 'the body is over MAX_BODY_BYTES (default 256 KiB; nothing changes)' };
        op.responses['415'] ??= { description: 'the body is not sent as Content-Type: application/json (nothing changes)' };
      }
      if (!isPublic) op.responses['429'] ??= tooManyResponse((OPERATION_ERRORS[id] ?? []).includes('too_many_turns'));
      for (const code of OPERATION_ERRORS[id] ?? []) op.responses[String(ERROR_EXAMPLES[code].status)] ??= { description: ERROR_EXAMPLES[code].summary };
      for (const [status, response] of Object.entries(op.responses)) {
        if (Number(status) >= 400 && response && 'description' in response && !response.content) {
          const examples = errorExamples(id, Number(status));
          response.content = { 'application/json': { ...errorBody['application/json'], ...(examples ? { examples } : {}) } };
        }
      }
      addRequestExample(op, id);
      addParameterExamples(op, id);
      const stream = op.responses['200'] && 'content' in op.responses['200'] ? op.responses['200'].content?.['text/event-stream'] : undefined;
      if (stream && STREAM_EXAMPLES[id]) stream.example = STREAM_EXAMPLES[id];
    }
  }
  addSseEventUnions(doc);
  return doc;
}

/** The 429 of a keyed route: the per-key request limit, and on turn routes the running-turn limits. */
function tooManyResponse(startsTurn: boolean): ResponseObject {
  return {
    description: startsTurn
      ? 'too_many_requests: over RATE_LIMIT_PER_MINUTE, or over a running-turn limit (MAX_CONCURRENT_TURNS_PER_KEY, _PER_PROJECT, MAX_CONCURRENT_TURNS); answered before any stream opens'
      : 'too_many_requests: over RATE_LIMIT_PER_MINUTE for this key',
    headers: { 'Retry-After': { description: 'seconds until a retry may succeed', schema: { type: 'integer' } } },
  };
}

/** Swagger UI's examples of one error answer: the operation's own codes for that status, else the status's generic body. */
function errorExamples(operationId: string, status: number): Record<string, ExampleObject> | undefined {
  const own = (OPERATION_ERRORS[operationId] ?? []).filter((code) => ERROR_EXAMPLES[code].status === status);
  const generic = STATUS_EXAMPLES[status];
  // a validation failure and the request limit are possible wherever the status is; a generic 404 only where no code says more
  const codes = [...(generic && (own.length === 0 || status !== 404) ? [generic] : []), ...own.filter((c) => c !== generic)];
  if (codes.length === 0) return undefined;
  return Object.fromEntries(codes.map((code) => [code, { summary: ERROR_EXAMPLES[code].summary, value: ERROR_EXAMPLES[code].body }]));
}

/** The value of every required path or query parameter without one, so that Execute runs with nothing typed in (issue #42). */
function addParameterExamples(op: OperationObject, operationId: string): void {
  for (const p of op.parameters ?? []) {
    if ('$ref' in p || !(p.in === 'path' || p.in === 'query') || !p.required) continue;
    const schema = p.schema && !('$ref' in p.schema) ? p.schema : undefined;
    if (p.example !== undefined || p.examples || schema?.example !== undefined || schema?.default !== undefined) continue;
    const value = PARAMETER_EXAMPLES[operationId]?.[p.name] ?? PARAMETER_EXAMPLES['*'][p.name];
    if (value !== undefined) p.example = value;
  }
}

/** The body "Try it out" starts from (see request-examples.ts), and what to put in it where it needs an id of yours. */
function addRequestExample(op: OperationObject, operationId: string): void {
  const body = op.requestBody && 'content' in op.requestBody ? op.requestBody.content['application/json'] : undefined;
  if (!body || REQUEST_EXAMPLES[operationId] === undefined) return;
  body.example = REQUEST_EXAMPLES[operationId];
  const note = REQUEST_EXAMPLE_NOTES[operationId];
  if (note) op.description = op.description ? `${op.description}\n\n${note}` : note;
}
