import { ArgumentsHost, Catch, ExceptionFilter, HttpException, HttpStatus, Logger } from '@nestjs/common';
import type { Request, Response } from 'express';
import { isDatabaseUnavailable } from './database-unavailable';
import { notAnObject } from './field-errors';
import { OrionException, retryAfterOf } from './orion.exception';

const STATUS_TEXT: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  409: 'Conflict',
  413: 'Payload Too Large',
  415: 'Unsupported Media Type',
  422: 'Unprocessable Entity',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
};

/**
 * One place where errors become HTTP: Nest's `{statusCode, error, message}` shape everywhere.
 * Coded domain exceptions keep their code as `error` (e.g. `two_stage_disabled`); unknown
 * errors are logged and answered with a generic 500 that leaks nothing. A response that has
 * already started (an SSE stream) is left to its own error handling.
 */
@Catch()
export class AllExceptionsFilter implements ExceptionFilter {
  private readonly logger = new Logger('Exceptions');

  catch(exception: unknown, host: ArgumentsHost): void {
    const ctx = host.switchToHttp();
    const res = ctx.getResponse<Response>();
    const req = ctx.getRequest<Request>();
    const { status, body } = this.toBody(exception, req);
    if (res.headersSent) {
      if (!res.writableEnded) res.end();
      return;
    }
    const retryAfter = retryAfterOf(exception);
    if (retryAfter !== undefined) res.setHeader('Retry-After', String(retryAfter));
    res.status(status).json(body);
  }

  private toBody(exception: unknown, req: Request): { status: number; body: Record<string, unknown> } {
    if (isJsonParseError(exception)) {
      // body-parser's strict mode refuses JSON that is not an object or array (`null`, `42`, `"x"`)
      // as a parse error, whose message ("\"null\" is not valid JSON") would send the caller looking for a typo
      const parsed = parsedJson((exception as { body?: unknown }).body);
      if (parsed.ok) return { status: 400, body: { statusCode: 400, error: 'Bad Request', message: notAnObject(parsed.value) } };
      const detail = (exception as Error).message;
      return { status: 400, body: { statusCode: 400, error: 'Bad Request', message: `Request body is not valid JSON: ${detail}` } };
    }
    if (exception instanceof OrionException) {
      const status = exception.httpStatus();
      return {
        status,
        body: { statusCode: status, error: exception.code, message: exception.message, ...(exception.details ?? {}) },
      };
    }
    if (exception instanceof HttpException) {
      const status = exception.getStatus();
      const r = exception.getResponse();
      if (typeof r === 'object' && r !== null) {
        const o = r as Record<string, unknown>;
        return {
          status,
          body: { statusCode: status, error: o.error ?? STATUS_TEXT[status] ?? 'Error', message: o.message ?? exception.message, ...o, },
        };
      }
      return { status, body: { statusCode: status, error: STATUS_TEXT[status] ?? 'Error', message: String(r) } };
    }
    // body-parser errors (bad JSON, too large) carry a status and `expose`
    const e = exception as { status?: number; statusCode?: number; expose?: boolean; message?: string; type?: string };
    const s = e?.status ?? e?.statusCode;
    if (typeof s === 'number' && s >= 400 && s < 500 && e.expose) {
      return { status: s, body: { statusCode: s, error: STATUS_TEXT[s] ?? 'Bad Request', message: e.message } };
    }
    if (isDatabaseUnavailable(exception)) {
      this.logger.warn(`${req.method} ${req.url}: database unavailable (${(exception as Error)?.message})`);
      return { status: 503, body: { statusCode: 503, error: 'database_unavailable', message: 'The database cannot be reached; try again shortly' } };
    }
    this.logger.error(`${req.method} ${req.url} failed: ${(exception as Error)?.stack ?? String(exception)}`);
    return {
      status: HttpStatus.INTERNAL_SERVER_ERROR,
      body: { statusCode: 500, error: 'Internal Server Error', message: 'Internal server error' },
    };
  }
}

/** body-parser's JSON failure (a SyntaxError with status 400), however it reaches the filter. */
function isJsonParseError(e: unknown): boolean {
  const x = e as { type?: string; status?: number; name?: string; cause?: { type?: string } } | null;
  return !!x && (x.type === 'entity.parse.failed' || x.cause?.type === 'entity.parse.failed' || (x.name === 'SyntaxError' && x.status === 400));
}

/** The body as JSON, when it is JSON at all. */
function parsedJson(body: unknown): { ok: true; value: unknown } | { ok: false } {
  if (typeof body !== 'string') return { ok: false };
  try {
    return { ok: true, value: JSON.parse(body) };
  } catch {
    return { ok: false };
  }
}
