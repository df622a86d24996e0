// first: tracing hooks http before anything loads it
import './instrument';
import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Logger as PinoNestLogger } from 'nestjs-pino';
import { AppModule } from './app.module';
import { AppConfigService } from './config/app-config.service';
import { readDotEnv } from './config/config.module';
import { validateEnv } from './config/env.schema';
import { configureApp } from './bootstrap';
import { SecretRegistry } from './common/secrets/secret-registry';
import { MaskingConsoleLogger } from './observability/logging';

/** Linux caps it at net.core.somaxconn (4096 on current kernels). */
const LISTEN_BACKLOG = 4096;

async function main(): Promise<void> {
  // the same validation the config module runs, before Nest logs anything of its own
  const env = validateEnv({ ...readDotEnv(), ...process.env });
  const json = env.LOG_FORMAT === 'json';
  // JSON: start-up lines wait for the pino logger instead of printing as plain text first
  const app = await NestFactory.create(AppModule.forRoot(), { bodyParser: false, ...(json ? { bufferLogs: true } : { logger: ['error', 'warn', 'log'] }) });
  configureApp(app, { drainOnSigterm: true });
  const config = app.get(AppConfigService);
  app.useLogger(json ? app.get(PinoNestLogger) : new MaskingConsoleLogger(app.get(SecretRegistry), logLevels(config.get('LOG_LEVEL'))));
  const port = config.get('PORT');
  // a longer accept queue than Node's 511: a burst of connections arriving while the event loop
  // is busy (embedded PGlite runs on it) waits in the kernel instead of being reset; Nest hands
  // the options object to Node's server.listen as it is
  await app.listen({ port, backlog: LISTEN_BACKLOG } as unknown as number);
  new Logger('Orion').log(`listening on http://localhost:${port} (Swagger UI: /docs)`);
}

function logLevels(level: 'error' | 'warn' | 'log' | 'debug' | 'verbose') {
  const all = ['error', 'warn', 'log', 'debug', 'verbose'] as const;
  return all.slice(0, all.indexOf(level) + 1) as Array<(typeof all)[number]>;
}

main().catch((err) => {
  // configuration errors are explained by their message; no stack needed
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
