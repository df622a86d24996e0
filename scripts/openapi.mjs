// `npm run openapi`: starts the built service on a free port (in-memory database, replay model,
// no MCP servers) and writes what its /docs-json serves to docs/openapi.json. The drift test
// (test/e2e/openapi-document.e2e-spec.ts) compares that file with the document the app serves.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const root = join(import.meta.dirname, '..');
const require = createRequire(import.meta.url);
require('reflect-metadata');
const { NestFactory } = require('@nestjs/core');
const { AppModule } = require(join(root, 'dist', 'app.module.js'));
const { configureApp } = require(join(root, 'dist', 'bootstrap.js'));

const workspace = mkdtempSync(join(tmpdir(), 'orion-openapi-'));
const app = await NestFactory.create(
  AppModule.forRoot({ DATABASE_URL: 'memory://', LLM_PROVIDER: 'replay', MCP_CONFIG: '', WORKSPACE_ROOT: workspace, API_KEYS: '', LOG_LEVEL: 'error' }),
  { bodyParser: false, logger: ['error'] },
);
try {
  configureApp(app);
  await app.listen(0, '127.0.0.1');
  const { port } = app.getHttpServer().address();
  const res = await fetch(`http://127.0.0.1:${port}/docs-json`);
  if (!res.ok) throw new Error(`/docs-json answered ${res.status}`);
  const out = join(root, 'docs', 'openapi.json');
  writeFileSync(out, `${JSON.stringify(await res.json(), null, 2)}\n`);
  console.log(`wrote ${out}`);
} finally {
  await app.close();
  rmSync(workspace, { recursive: true, force: true });
}
