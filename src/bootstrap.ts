import type { INestApplication } from '@nestjs/common';
import { SwaggerModule } from '@nestjs/swagger';
import { BadRequestException } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
import { buildOpenApiDocument } from './common/openapi/openapi-document';
import helmet from 'helmet';
import { RunDrainService } from './runs/run-drain.service';

/** The signals that close the service gracefully (finish the open turns' bookkeeping, then exit). */
export const SHUTDOWN_SIGNALS = ['SIGTERM', 'SIGINT', 'SIGHUP'];

/**
 * `drainOnSigterm` (the service's own start, main.ts): SIGTERM first drains the instance (a
 * rolling deploy: no new turn, running turns finish or are handed over, RunDrainService), then
 * closes it as the other signals do. Tests that start apps in-process keep Nest's handling.
 */
export function configureApp(app: INestApplication, opts: { drainOnSigterm?: boolean } = {}): void {
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
  app.enableShutdownHooks(opts.drainOnSigterm ? SHUTDOWN_SIGNALS.filter((s) => s !== 'SIGTERM') : SHUTDOWN_SIGNALS);
  if (opts.drainOnSigterm) drainOnSigterm(app);
  SwaggerModule.setup('docs', app, buildOpenApiDocument(app), { jsonDocumentUrl: 'docs-json' });
}

/** SIGTERM: drain, close, then end by the signal as Nest's own handler does. A second SIGTERM while draining closes at once. */
function drainOnSigterm(app: INestApplication): void {
  let draining = false;
  const close = async () => {
    process.removeListener('SIGTERM', onTerm);
    await app.close().catch((err: unknown) => console.error(`shutdown: ${(err as Error).message}`));
    process.kill(process.pid, 'SIGTERM');
  };
  const onTerm = () => {
    if (draining) return void close();
    draining = true;
    void app
      .get(RunDrainService)
      .run()
      .catch((err: unknown) => console.error(`drain: ${(err as Error).message}`))
      .then(close);
  };
  process.on('SIGTERM', onTerm);
}
