import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { INestApplication } from '@nestjs/common';
import { Test, type TestingModuleBuilder } from '@nestjs/testing';
import { AppModule } from '../../src/app.module';
import { configureApp } from '../../src/bootstrap';
import { createTestDatabase } from './db';

export interface TestApp {
  app: INestApplication;
  /** http://127.0.0.1:<port> of the listening app */
  url: string;
  workspace: string;
  databaseUrl: string;
  close(): Promise<void>;
}

/**
 * Boots the whole service on a random port with its own database (PGlite in memory, or a fresh
 * PostgreSQL database on the PostgreSQL pass) and a temporary workspace. `env` overrides the
 * configuration; pass `databaseUrl` to share a database between two apps (two instances).
 */
export interface StartAppOptions {
  databaseUrl?: string;
  /** replaces providers before the app is built */
  override?: (builder: TestingModuleBuilder) => TestingModuleBuilder;
  /** runs on the app before it listens (e.g. to install its JSON logger) */
  setup?: (app: INestApplication) => void;
}

export async function startApp(env: Record<string, string | undefined> = {}, opts: StartAppOptions = {}): Promise<TestApp> {
  const db = opts.databaseUrl ? { url: opts.databaseUrl, drop: async () => undefined } : await createTestDatabase();
  const workspace = env.WORKSPACE_ROOT ?? mkdtempSync(join(tmpdir(), 'orion-ws-'));
  const builder = Test.createTestingModule({
    imports: [
      AppModule.forRoot({
        DATABASE_URL: db.url,
        WORKSPACE_ROOT: workspace,
        LLM_PROVIDER: 'replay',
        MCP_CONFIG: '',
        LOG_LEVEL: 'error',
        ...env,
      }),
    ],
  });
  const moduleRef = await (opts.override ? opts.override(builder) : builder).compile();
  const app = moduleRef.createNestApplication({ bodyParser: false, logger: ['error'] });
  configureApp(app);
  opts.setup?.(app);
  await app.listen(0, '127.0.0.1');
  const addr = app.getHttpServer().address() as { port: number };
  return {
    app,
    url: `http://127.0.0.1:${addr.port}`,
    workspace,
    databaseUrl: db.url,
    close: async () => {
      await app.close();
      await db.drop();
    },
  };
}

/** A second instance of `of`'s service: the same database and workspace, another process's worth of state. */
export function startPeer(of: TestApp, env: Record<string, string | undefined> = {}): Promise<TestApp> {
  return startApp({ ...env, WORKSPACE_ROOT: of.workspace }, { databaseUrl: of.databaseUrl });
}
