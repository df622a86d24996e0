import { request } from 'node:http';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { TypeOrmHealthIndicator } from '@nestjs/terminus';
import { ScriptedAdapter } from './scripted-model';

// runtime from dist (Nest's DI needs the decorator metadata tsc emits), types from src
/* eslint-disable @typescript-eslint/no-require-imports */
const { AppModule } = require('../../dist/app.module') as typeof import('../../src/app.module');
const { configureApp } = require('../../dist/bootstrap') as typeof import('../../src/bootstrap');
const { LLM_ADAPTER } = require('../../dist/llm/llm-adapter.port') as typeof import('../../src/llm/llm-adapter.port');
const { LlmModels } = require('../../dist/llm/llm-models') as typeof import('../../src/llm/llm-models');

/**
 * The built service in this process, on the benchmark's scripted model (put in place of
 * LLM_ADAPTER), with two-stage on and a temporary workspace holding docs/roadmap.md; embedded
 * PGlite in memory unless DATABASE_URL is set. `turn()` sends one two-stage turn over HTTP and
 * resolves with the bytes of its SSE response.
 */
export async function serviceInProcess(env: Record<string, string> = {}): Promise<{ app: INestApplication; port: number; turn: () => Promise<number> }> {
  const workspace = mkdtempSync(join(tmpdir(), 'orion-bench-'));
  mkdirSync(join(workspace, 'default', 'docs'), { recursive: true });
  writeFileSync(join(workspace, 'default', 'docs', 'roadmap.md'), '# Roadmap\n\nShip the runs module.\n');
  const moduleRef = await Test.createTestingModule({
    imports: [
      AppModule.forRoot({
        DATABASE_URL: process.env.DATABASE_URL ?? 'memory://',
        WORKSPACE_ROOT: workspace,
        TWO_STAGE_ENABLED: 'true',
        MCP_CONFIG: '',
        LOG_LEVEL: 'error',
        ...(process.env.PGLITE_PROFILE ? { PGLITE_PROFILE: process.env.PGLITE_PROFILE } : {}),
        ...env,
      }),
    ],
  })
    // terminus checks its optional peers with import.meta.resolve, which fails under tsx's
    // loader; the benchmark never probes health, so the database indicator is left out
    .overrideProvider(TypeOrmHealthIndicator)
    .useValue({})
    .overrideProvider(LLM_ADAPTER)
    .useValue(new ScriptedAdapter())
    // turns pick their model's client from LlmModels; without it every turn uses LLM_ADAPTER
    .overrideProvider(LlmModels)
    .useValue(null)
    .compile();
  const app = moduleRef.createNestApplication({ bodyParser: false, logger: ['error'] });
  configureApp(app);
  await app.listen(0, '127.0.0.1');
  const port = (app.getHttpServer().address() as AddressInfo).port;
  return { app, port, turn: () => twoStageTurn(port) };
}

function twoStageTurn(port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/api/chat/messages_two_stage', method: 'POST', headers: { 'content-type': 'application/json' } }, (res) => {
      let bytes = 0;
      res.on('data', (c: Buffer) => (bytes += c.length));
      res.on('end', () => (res.statusCode === 200 ? resolve(bytes) : reject(new Error(`HTTP ${res.statusCode}`))));
    });
    req.on('error', reject);
    req.end('{"content":"Summarize docs/roadmap.md"}');
  });
}
