import { type ArgumentsHost, Catch, type ExceptionFilter, Logger } from '@nestjs/common';
import type { Request, Response } from 'express';
import { retryAfterOf } from '../common/errors/orion.exception';
import { OpenAiError, SHOULD_RETRY_HEADER, toOpenAiError } from './openai-error';

/**
 * Every error of the /v1 routes in OpenAI's shape (`{error: {message, type, param, code}}`), so
 * OpenAI clients raise their own exception classes (BadRequestError, AuthenticationError, …).
 * Bound to the controller, so it also answers what the global guards refuse there (401, 413,
 * 415, 429); the other routes keep Orion's shape. A response already started (a stream) is
 * left to its own error handling. An error a retry must not repeat says so (`x-should-retry: false`).
 */
@Catch()
export class OpenAiErrorFilter implements ExceptionFilter {
  private readonly logger = new Logger('OpenAiCompat');

  catch(exception: unknown, host: ArgumentsHost): void {
    const res = host.switchToHttp().getResponse<Response>();
    const req = host.switchToHttp().getRequest<Request>();
    let error = toOpenAiError(exception);
    if (!error) {
      this.logger.error(`${req.method} ${req.url} failed: ${(exception as Error)?.stack ?? String(exception)}`);
      error = new OpenAiError(500, 'Internal server error', null, 'internal_error');
    }
    if (res.headersSent) {
      if (!res.writableEnded) res.end();
      return;
    }
    if (error.opts.retry === false) res.setHeader(SHOULD_RETRY_HEADER, 'false');
    const retryAfter = retryAfterOf(exception);
    if (retryAfter !== undefined) res.setHeader('Retry-After', String(retryAfter));
    res.status(error.status).json(error.body());
  }
}
