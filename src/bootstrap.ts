import type { INestApplication } from '@nestjs/common';
import { SwaggerModule } from '@nestjs/swagger';
import { BadRequestException } from '@nestjs/common';
import { json, type NextFunction, type Request, type Response } from 'express';
import { buildOpenApiDocument } from './common/openapi/openapi-document';
import { findForbiddenKey } from './common/util/forbidden-keys';
import helmet from 'helmet';

/** Deeper JSON than any route accepts; deeper bodies are refused before validation recurses into them. */
export const MAX_BODY_DEPTH = 64;

/**
 * One walk over a parsed JSON body: whether it nests deeper than `limit`, and whether any string
 * or key holds U+0000 (PostgreSQL cannot store it). Iterative, so a hostile body cannot overflow
 * the stack; stops at the first problem.
 */
export function inspectBody(value: unknown, limit: number): { tooDeep: boolean; hasNul: boolean } {
  const stack: Array<[unknown, number]> = [[value, 1]];
  while (stack.length) {
    const [v, d] = stack.pop()!;
    if (typeof v === 'string') {
      if (v.includes('\u0000')) return { tooDeep: false, hasNul: true };
      continue;
    }
    if (v === null || typeof v !== 'object') continue;
    if (d > limit) return { tooDeep: true, hasNul: false };
    for (const [k, x] of Array.isArray(v) ? v.entries() : Object.entries(v as Record<string, unknown>)) {
      if (typeof k === 'string' && k.includes('\u0000')) return { tooDeep: false, hasNul: true };
      stack.push([x, d + 1]);
    }
  }
  return { tooDeep: false, hasNul: false };
}

/** The signals that close the service gracefully (finish the open turns' bookkeeping, then exit). */
export const SHUTDOWN_SIGNALS = ['SIGTERM', 'SIGINT', 'SIGHUP'];

export function configureApp(app: INestApplication): void {
  // 32,000 characters of content, up to 4 bytes each, plus the rest of the body
  // security headers; no CSP from helmet: the page and debug panel send their own
  // (content-security-policy.ts) and the JSON API needs none. Also removes X-Powered-By.
  app.use(helmet({ contentSecurityPolicy: false }));
  app.use(json({ limit: '256kb' }));
  app.use((req: Request, _res: Response, next: NextFunction) => {
    if (/%00|\u0000/i.test(req.originalUrl)) return next(new BadRequestException('The URL must not contain NUL characters (%00)'));
    const body = req.body === undefined ? { tooDeep: false, hasNul: false } : inspectBody(req.body, MAX_BODY_DEPTH);
    if (body.tooDeep) return next(new BadRequestException(`Request body is nested deeper than ${MAX_BODY_DEPTH} levels`));
    if (body.hasNul) return next(new BadRequestException('The request body must not contain NUL characters (\\u0000)'));
    const forbidden = req.body === undefined ? null : findForbiddenKey(req.body);
    if (forbidden) return next(new BadRequestException(`The request body must not have a key named __proto__, constructor or prototype (found at ${forbidden})`));
    next();
  });
  // Nest's default list includes SIGUSR2 (nodemon's restart signal), which would stop the service
  // when an operator asks Node for a heap snapshot (--heapsnapshot-signal=SIGUSR2), and the fault
  // signals (SIGSEGV, SIGABRT…), after which a graceful close is not what should run.
  app.enableShutdownHooks(SHUTDOWN_SIGNALS);
  SwaggerModule.setup('docs', app, buildOpenApiDocument(app), { jsonDocumentUrl: 'docs-json' });
}
