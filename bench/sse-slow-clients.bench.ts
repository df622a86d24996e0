/**
 * npm run bench:slow-clients (needs `nest build`)
 *
 * 100 clients that stop reading: each starts a two-stage turn whose model (no delays) answers
 * with 20,000 deltas of 1 KB (far more than the socket buffers hold), reads the first bytes, then pauses its socket. Measured: the
 * server's RSS growth while they sit there, how many events each run produced (a run waits for
 * its client instead of queueing its answer), and that every run is cancelled once its client
 * goes away. The floor: a plain Node HTTP server writing the same 2 MB answer to 100 paused
 * clients with write()/'drain' backpressure, the least code that does the same job.
 *
 * Run it on PostgreSQL (DATABASE_URL=postgres://…): with the embedded in-memory PGlite, the
 * events the runs store (what the sockets took) are in this process's RSS too.
 */
import { request, createServer, type IncomingMessage, type ClientRequest } from 'node:http';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { Test } from '@nestjs/testing';
import { TypeOrmHealthIndicator } from '@nestjs/terminus';
import type { DataSource } from 'typeorm';
import type { LlmAdapter, LlmCapabilities, LlmCompletion, LlmStreamEvent } from '../src/llm/llm-adapter.port';
import { BenchReport } from './report';

/* eslint-disable @typescript-eslint/no-require-imports */
const { AppModule } = require('../dist/app.module') as typeof import('../src/app.module');
const { configureApp } = require('../dist/bootstrap') as typeof import('../src/bootstrap');
const { LLM_ADAPTER } = require('../dist/llm/llm-adapter.port') as typeof import('../src/llm/llm-adapter.port');
const { LlmModels } = require('../dist/llm/llm-models') as typeof import('../src/llm/llm-models');
const { DataSource: DataSourceToken } = require('typeorm') as typeof import('typeorm');

const CLIENTS = Number(process.env.BENCH_CLIENTS ?? 100);
const DELTAS = Number(process.env.BENCH_DELTAS ?? 20_000);
const PIECE = 'x'.repeat(1024);
const SIT_MS = 5000;
/** the stated bound: RSS growth per non-reading client */
const BOUND_PER_CLIENT_MB = 1;

class LongAnswer implements LlmAdapter {
  readonly provider = 'bench';
  readonly model = 'bench';
  async *stream(_req: unknown, signal?: AbortSignal): AsyncIterable<LlmStreamEvent> {
    for (let i = 0; i < DELTAS && !signal?.aborted; i++) yield { type: 'text-delta', text: `${i}:${PIECE} ` };
    yield { type: 'finish', reason: 'stop' };
  }
  async complete(): Promise<LlmCompletion> {
    throw new Error('not used');
  }
  async capabilities(): Promise<LlmCapabilities> {
    return { provider: 'bench', model: 'bench', toolCalling: true, contextWindow: 32768, replay: false };
  }
}

/** Opens a request that reads its first bytes, then stops reading. */
function stalled(port: number, path: string, body?: string): Promise<{ req: ClientRequest; res: IncomingMessage }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, method: body ? 'POST' : 'GET', headers: { 'content-type': 'application/json' } }, (res) => {
      res.once('data', () => {
        res.pause();
        resolve({ req, res });
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}

const mb = (b: number) => b / 1024 / 1024;
/** memory the process still holds after a full GC: JS heap plus buffers */
const retained = () => {
  const m = process.memoryUsage();
  return m.heapUsed + m.external;
};
const settle = async () => {
  (globalThis as { gc?: () => void }).gc?.();
  await new Promise((r) => setTimeout(r, 200));
};

async function floor(): Promise<number> {
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    let i = 0;
    const pump = () => {
      while (i < DELTAS) if (!res.write(`event: chunk\ndata: {"content":"${i++}:${PIECE} "}\n\n`)) return void res.once('drain', pump);
      res.end();
    };
    pump();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const port = (server.address() as AddressInfo).port;
  await settle();
  const before = process.memoryUsage().rss;
  const clients = await Promise.all(Array.from({ length: CLIENTS }, () => stalled(port, '/')));
  await new Promise((r) => setTimeout(r, SIT_MS));
  await settle();
  const growth = process.memoryUsage().rss - before;
  for (const c of clients) c.req.destroy();
  server.closeAllConnections();
  server.close();
  return growth;
}

async function main() {
  if (!(globalThis as { gc?: unknown }).gc) {
    const { spawnSync } = await import('node:child_process');
    const r = spawnSync(process.execPath, ['--expose-gc', ...process.execArgv, ...process.argv.slice(1)], { stdio: 'inherit' });
    process.exit(r.status ?? 1);
  }
  const moduleRef = await Test.createTestingModule({
    imports: [AppModule.forRoot({ DATABASE_URL: process.env.DATABASE_URL ?? 'memory://', WORKSPACE_ROOT: mkdtempSync(join(tmpdir(), 'orion-bench-')), TWO_STAGE_ENABLED: 'true', MCP_CONFIG: '', LOG_LEVEL: 'error', MAX_CONCURRENT_TURNS: String(CLIENTS), LOOP_CONTENT_REPEATS: '0' })],
  })
    // terminus checks its optional peers with import.meta.resolve, which fails under tsx's
    // loader; the benchmark never probes health, so the database indicator is left out
    .overrideProvider(TypeOrmHealthIndicator)
    .useValue({})
    .overrideProvider(LLM_ADAPTER)
    .useValue(new LongAnswer())
    // turns pick their model's client from LlmModels; without it every turn uses LLM_ADAPTER
    .overrideProvider(LlmModels)
    .useValue(null)
    .compile();
  const app = moduleRef.createNestApplication({ bodyParser: false, logger: ['error'] });
  configureApp(app);
  await app.listen(0, '127.0.0.1');
  const port = (app.getHttpServer().address() as AddressInfo).port;
  const ds = app.get(DataSourceToken) as DataSource;
  try {
    const floorGrowth = await floor();
    // warm-up: one turn read to its end (code paths, pool connections) before measuring
    await new Promise<void>((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port, path: '/api/chat/messages_two_stage', method: 'POST', headers: { 'content-type': 'application/json' } }, (res) => {
        res.resume();
        res.on('end', resolve);
      });
      req.on('error', reject);
      req.end('{"content":"warm up"}');
    });
    await settle();
    const before = process.memoryUsage().rss;
    const retainedBefore = retained();
    const clients = await Promise.all(Array.from({ length: CLIENTS }, () => stalled(port, '/api/chat/messages_two_stage', '{"content":"a long answer"}')));
    await new Promise((r) => setTimeout(r, SIT_MS));
    await settle();
    const growth = process.memoryUsage().rss - before;
    const retainedGrowth = retained() - retainedBefore;
    const [{ running }] = await ds.query(`SELECT count(*)::int AS running FROM runs WHERE status = 'running'`);
    const [{ avg, max }] = await ds.query(`SELECT avg(n)::float AS avg, max(n)::int AS max FROM (SELECT count(*) AS n FROM run_events e JOIN runs r USING (request_id) WHERE r.status = 'running' GROUP BY request_id) x`);

    for (const c of clients) c.req.destroy();
    const t0 = Date.now();
    let cancelled = 0;
    while (Date.now() - t0 < 30_000) {
      [{ cancelled }] = await ds.query(`SELECT count(*)::int AS cancelled FROM runs WHERE status = 'cancelled'`);
      if (cancelled === CLIENTS) break;
      await new Promise((r) => setTimeout(r, 200));
    }

    console.log(`${CLIENTS} clients that stop reading a ${DELTAS}-delta (${Math.round((DELTAS * PIECE.length) / 1024 / 1024)} MB) answer, ${SIT_MS / 1000} s later:`);
    console.log(`  Orion retained memory (heap + buffers after GC): +${mb(retainedGrowth).toFixed(1)} MB (${(mb(retainedGrowth) / CLIENTS).toFixed(2)} MB per client; bound ${BOUND_PER_CLIENT_MB} MB per client: ${mb(retainedGrowth) / CLIENTS <= BOUND_PER_CLIENT_MB ? 'met' : 'NOT met'})`);
    console.log(`  Orion RSS growth: ${mb(growth).toFixed(1)} MB (${(mb(growth) / CLIENTS).toFixed(2)} MB per client; includes freed memory the allocator keeps)`);
    console.log(`  floor (plain http + drain, same clients): RSS growth ${mb(floorGrowth).toFixed(1)} MB`);
    console.log(`  runs still waiting for their client: ${running}/${CLIENTS}; events stored per run: avg ${Math.round(avg)}, max ${max} of ${DELTAS + 5}`);
    const cancelMs = Date.now() - t0;
    console.log(`  after the clients left: ${cancelled}/${CLIENTS} runs cancelled in ${cancelMs} ms`);
    new BenchReport(
      'slow-clients',
      'Clients that stop reading a long two-stage answer: the server memory they cost while they sit, how many events each run produced ' +
        '(a run waits for its client), and that every run is cancelled once its client goes away. Floor: a plain Node HTTP server writing ' +
        'the same answer to the same paused clients with write()/drain backpressure.',
      { clients: CLIENTS, deltas: DELTAS, deltaBytes: PIECE.length, sitSeconds: SIT_MS / 1000, database: process.env.DATABASE_URL ? 'PostgreSQL' : 'PGlite in memory' },
    )
      .add('retained.mb', 'Orion retained memory growth (heap + buffers after GC)', mb(retainedGrowth), 'MB')
      .add('retained.per-client.mb', `retained memory per client (bound ${BOUND_PER_CLIENT_MB} MB)`, mb(retainedGrowth) / CLIENTS, 'MB')
      .add('rss.mb', 'Orion RSS growth', mb(growth), 'MB', { floor: mb(floorGrowth) })
      .add('rss.per-client.mb', 'Orion RSS growth per client', mb(growth) / CLIENTS, 'MB', { floor: mb(floorGrowth) / CLIENTS })
      .add('runs.waiting', 'runs still waiting for their client', Number(running), '')
      .add('events.avg', 'events stored per run, average', Math.round(avg), '')
      .add('events.max', `events stored per run, max (of ${DELTAS + 5})`, Number(max), '')
      .add('runs.cancelled', 'runs cancelled after the clients left', Number(cancelled), '')
      .add('cancel.ms', 'time until those runs were cancelled', cancelMs, 'ms')
      .write();
  } finally {
    await app.close();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
