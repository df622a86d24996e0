import { BadRequestException, CanActivate, ExecutionContext, HttpException, Injectable } from '@nestjs/common';
import { json, type Request, type RequestHandler, type Response } from 'express';
import { AppConfigService } from '../../config/app-config.service';
import { findForbiddenKey } from '../util/forbidden-keys';
import { inspectBody, MAX_BODY_DEPTH } from './inspect-body';

/**
 * Reads and checks a request's JSON body. A guard, registered right after the API-key guard,
 * rather than an Express middleware: middleware runs before Nest has matched the route, so it
 * cannot know whether the route is public, and a caller without a key would get 413/400/415 for
 * its body instead of 401. Here the key is checked first, the body of a refused caller is never
 * read, and the guards after this one (project scope, turn limits) still see the parsed body.
 */
@Injectable()
export class RequestBodyGuard implements CanActivate {
  private readonly maxBytes: number;
  private readonly parse: RequestHandler;

  constructor(config: AppConfigService) {
    this.maxBytes = config.get('MAX_BODY_BYTES');
    this.parse = json({ limit: this.maxBytes });
  }

  async canActivate(context: ExecutionContext): Promise<boolean> {
    if (context.getType() !== 'http') return true;
    const http = context.switchToHttp();
    const req = http.getRequest<Request>();
    if (carriesBody(req) && !req.is('application/json')) {
      // without this, an unparsed body reaches validation as "no body" and the caller reads
      // messages about missing fields instead of the header to fix
      // the header is echoed so the caller sees what to fix, cut short: it is theirs, but unbounded
      const type = req.headers['content-type'];
      const sent = type ? `got "${type.length > 100 ? `${type.slice(0, 100)}…` : type}"` : 'no Content-Type header was sent';
      throw new HttpException({ statusCode: 415, error: 'Unsupported Media Type', message: `The request body must be JSON: send the header Content-Type: application/json (${sent})` }, 415);
    }
    await new Promise<void>((resolve, reject) => this.parse(req, http.getResponse<Response>(), (err?: unknown) => (err ? reject(this.explain(err)) : resolve())));
    if (req.body === undefined) return true;
    const body = inspectBody(req.body, MAX_BODY_DEPTH);
    if (body.tooDeep) throw new BadRequestException(`Request body is nested deeper than ${MAX_BODY_DEPTH} levels`);
    if (body.hasNul) throw new BadRequestException('The request body must not contain NUL characters (\\u0000)');
    const forbidden = findForbiddenKey(req.body);
    if (forbidden) throw new BadRequestException(`The request body must not have a key named __proto__, constructor or prototype (found at ${forbidden})`);
    return true;
  }

  /** body-parser's size error names neither the setting nor its value; every other error passes as it is. */
  private explain(err: unknown): unknown {
    const e = err as { type?: string; length?: number };
    if (e?.type !== 'entity.too.large') return err;
    const sent = typeof e.length === 'number' ? ` (${e.length} bytes sent)` : '';
    return new HttpException(
      {
        statusCode: 413,
        error: 'Payload Too Large',
        message: `The request body is larger than MAX_BODY_BYTES=${this.maxBytes} bytes${sent}`,
        limit: 'MAX_BODY_BYTES',
        max: this.maxBytes,
      },
      413,
    );
  }
}

/** A body with at least one byte: a declared non-zero length, or a chunked one. */
function carriesBody(req: Request): boolean {
  if (req.headers['transfer-encoding'] !== undefined) return true;
  const length = Number(req.headers['content-length']);
  return Number.isFinite(length) && length > 0;
}
