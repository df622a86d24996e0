import { HttpException } from '@nestjs/common';
import { isDatabaseUnavailable } from '../common/errors/database-unavailable';
import { OrionException } from '../common/errors/orion.exception';

/** The error body OpenAI's API answers with, which OpenAI clients read (`err.error.message`, `err.code`). */
export interface OpenAiErrorBody {
  error: { message: string; type: string; param: string | null; code: string | null; orion?: Record<string, unknown> };
}

/** OpenAI's error `type` for an HTTP status (its clients pick their exception class from the status). */
export function errorType(status: number): string {
  if (status === 401) return 'authentication_error';
  if (status === 403) return 'permission_error';
  if (status === 404) return 'not_found_error';
  if (status === 429) return 'rate_limit_error';
  if (status >= 500) return 'server_error';
  return 'invalid_request_error';
}

/**
 * An error of the OpenAI-compatible routes, answered as `{error: {message, type, param, code}}`.
 * `opts.retry: false` answers with `x-should-retry: false`, which the Stainless-generated SDKs
 * (the `openai` packages among them) obey instead of retrying 408, 409, 429 and 5xx: for what a
 * retry would do again (a second turn). `opts.orion`: Orion's facts about it, as `error.orion`.
 */
export class OpenAiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly param: string | null = null,
    readonly code: string | null = null,
    readonly opts: { retry?: false; orion?: Record<string, unknown> } = {},
  ) {
    super(message);
  }

  body(): OpenAiErrorBody {
    return { error: { message: this.message, type: errorType(this.status), param: this.param, code: this.code, ...(this.opts.orion && { orion: this.opts.orion }) } };
  }
}

/** The header the Stainless-generated SDKs read before retrying. */
export const SHOULD_RETRY_HEADER = 'x-should-retry';

/** 400 invalid_request_error naming the request field at fault. */
export const invalidRequest = (message: string, param: string | null, code: string | null = null): OpenAiError => new OpenAiError(400, message, param, code);

/**
 * Any error a /v1 request can meet (a guard's 401/413/415/429, a body that is not JSON, the
 * chat service's coded 404s, a database outage) in OpenAI's shape, with the status it would have
 * on the other routes; Orion's own code (e.g. `conversation_not_found`, `too_many_requests`)
 * becomes `code`. `null` for what is a bug (the caller answers a generic 500 and logs it).
 */
export function toOpenAiError(exception: unknown): OpenAiError | null {
  if (exception instanceof OpenAiError) return exception;
  if (isJsonParseError(exception)) {
    // body-parser's strict mode refuses JSON that is not an object or array (`null`, `42`) as a parse error
    if (isJsonText((exception as { body?: unknown }).body)) return invalidRequest('The request body must be a JSON object', null, 'invalid_body');
    return invalidRequest(`We could not parse the JSON body of your request: ${(exception as Error).message}`, null, 'invalid_json');
  }
  if (exception instanceof OrionException) {
    // a refusal with a wait (a used-up budget) is not retried by the SDKs before it is over, and
    // says what it is; nor is a budget no turn fits (it has no wait: retrying cannot help)
    const noRetry = typeof exception.details?.retryAfter === 'number' || exception.code === 'budget_exhausted';
    return new OpenAiError(exception.httpStatus(), exception.message, null, exception.code, noRetry ? { retry: false, orion: exception.details } : {});
  }
  if (exception instanceof HttpException) {
    const status = exception.getStatus();
    const r = exception.getResponse();
    const o = typeof r === 'object' && r !== null ? (r as Record<string, unknown>) : { message: String(r) };
    const message = Array.isArray(o.message) ? o.message.join('; ') : String(o.message ?? exception.message);
    // Nest's own codes are status texts ("Bad Request"); Orion's domain codes are snake_case
    const code = typeof o.error === 'string' && /^[a-z_]+$/.test(o.error) ? o.error : null;
    return new OpenAiError(status, message, null, code);
  }
  // body-parser's errors (too large, bad encoding) carry a status and `expose`
  const e = exception as { status?: number; expose?: boolean; message?: string } | null;
  if (typeof e?.status === 'number' && e.status >= 400 && e.status < 500 && e.expose) return new OpenAiError(e.status, e.message ?? 'Bad request');
  if (isDatabaseUnavailable(exception)) return new OpenAiError(503, 'The database cannot be reached; try again shortly', null, 'database_unavailable');
  return null;
}

/** body-parser's JSON failure (a SyntaxError with status 400), however it reaches the filter. */
function isJsonParseError(e: unknown): boolean {
  const x = e as { type?: string; status?: number; name?: string; cause?: { type?: string } } | null;
  return !!x && (x.type === 'entity.parse.failed' || x.cause?.type === 'entity.parse.failed' || (x.name === 'SyntaxError' && x.status === 400));
}

function isJsonText(body: unknown): boolean {
  if (typeof body !== 'string') return false;
  try {
    JSON.parse(body);
    return true;
  } catch {
    return false;
  }
}
