import type { INestApplication } from '@nestjs/common';
import { SwaggerModule } from '@nestjs/swagger';
import { BadRequestException } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
import { buildOpenApiDocument } from './common/openapi/openapi-document';
import helmet from 'helmet';

/** The signals that close the service gracefully (finish the open turns' bookkeeping, then exit). */
export const SHUTDOWN_SIGNALS = ['SIGTERM', 'SIGINT', 'SIGHUP'];

export function configureApp(app: INestApplication): void {
  // security headers; no CSP from helmet: the page and debug panel send their own
  // (content-security-policy.ts) and the JSON API needs none. Also removes X-Powered-By.
  app.use(helmet({ contentSecurityPolicy: false }));
  // Bodies are read by RequestBodyGuard after the API key is checked (common/body), not here.
  app.use((req: Request, _res: Response, next: NextFunction) => {
    if (/%00|\u0000/i.test(req.originalUrl)) return next(new BadRequestException('The URL must not contain NUL characters (%00)'));
    next();
  });
  // Nest's default list includes SIGUSR2 (nodemon's restart signal), which would stop the service
  // when an operator asks Node for a heap snapshot (--heapsnapshot-signal=SIGUSR2), and the fault
  // signals (SIGSEGV, SIGABRT…), after which a graceful close is not what should run.
  app.enableShutdownHooks(SHUTDOWN_SIGNALS);
  SwaggerModule.setup('docs', app, buildOpenApiDocument(app), { jsonDocumentUrl: 'docs-json' });
}
