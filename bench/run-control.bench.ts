/**
 * npm run bench:run-control  [-- --runs 30]
 *
 * Cross-instance cancel latency (issue #7: within 1 s at p95). Starts two real Orion processes
 * (`node dist/main.js`) on one PostgreSQL (DATABASE_URL, required) and a local model server that
 * streams slowly. Each run starts a two-stage turn on instance A; at its first chunk the bench
 * sends `POST /api/chat/runs/:id/cancel` to instance B and measures
 *   - done: until A's stream delivers `done{stopReason:"cancelled"}`,
 *   - upstream: until the model server sees A's request to it closed (the abort reached it).
 * Prints p50 / p95 / max of both. Without DATABASE_URL it runs A and B as one embedded
 * instance (the same code path, in one process).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { createServer, request, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SseReader } from '../test/support/sse-reader';
import { BenchReport } from './report';

const RUNS = Number(process.argv[process.argv.indexOf('--runs') + 1]) || 20;
const DIST = join(__dirname, '..', 'dist', 'main.js');

/** A model that streams 400 words, 50 ms apart, and records when each request's socket closes. */
function startModel(): Promise<{ port: number; closedAt: Map<string, number>; close: () => void }> {
  const closedAt = new Map<string, number>();
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      const id = String(req.headers['x-client-request-id'] ?? Math.random());
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      let i = 0;
      const timer = setInterval(() => {
        if (i++ >= 400) {
          res.end('data: [DONE]\n\n');
          clearInterval(timer);
          return;
        }
        res.write(`data: ${JSON.stringify({ id: 'b', object: 'chat.completion.chunk', created: 0, model: 'b', choices: [{ index: 0, delta: { content: `w${i} ` }, finish_reason: null }] })}\n\n`);
      }, 50);
      res.on('close', () => {
        clearInterval(timer);
        closedAt.set(id, Date.now());
      });
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({ port: (server.address() as AddressInfo).port, closedAt, close: () => server.close() })));
}

async function startOrion(port: number, env: Record<string, string>): Promise<ChildProcess> {
  const child = spawn(process.execPath, [DIST], { cwd: mkdtempSync(join(tmpdir(), 'orion-bench-')), env: { ...process.env, ...env, PORT: String(port), LOG_LEVEL: 'warn' }, stdio: ['ignore', 'ignore', 'inherit'] });
  for (let i = 0; i < 300; i++) {
    try {
      const r = await fetch(`http://127.0.0.1:${port}/api/health`);
      if (r.ok) return child;
    } catch {
      /* not up yet */
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill();
  throw new Error(`Orion on port ${port} did not start`);
}

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const p = (s.address() as AddressInfo).port;
      s.close(() => resolve(p));
    });
  });
}

/** One turn on A, cancelled through B at its first chunk. */
function oneRun(a: number, b: number, model: { closedAt: Map<string, number> }): Promise<{ done: number; upstream: number }> {
  return new Promise((resolve, reject) => {
    let sentAt = 0;
    let requestId = '';
    const sse = new SseReader();
    const req = request({ host: '127.0.0.1', port: a, path: '/api/chat/messages_two_stage', method: 'POST', headers: { 'content-type': 'application/json' } }, (res: IncomingMessage) => {
      res.on('data', (chunk: Buffer) => {
        for (const f of sse.push(chunk)) {
          const event = f.event;
          const data = JSON.parse(f.data || '{}');
          if (event === 'start') requestId = data.requestId;
          if (event === 'chunk' && !sentAt) {
            sentAt = Date.now();
            void fetch(`http://127.0.0.1:${b}/api/chat/runs/${requestId}/cancel`, { method: 'POST' });
          }
          if (event === 'done') {
            const done = Date.now() - sentAt;
            if (data.stopReason !== 'cancelled') return reject(new Error(`stopReason ${data.stopReason}`));
            setTimeout(() => {
              const closed = model.closedAt.get(requestId);
              resolve({ done, upstream: closed ? closed - sentAt : Number.NaN });
            }, 200);
          }
        }
      });
    });
    req.on('error', reject);
    req.end(JSON.stringify({ content: 'stream for a while' }));
  });
}

const q = (xs: number[], p: number) => xs[Math.min(xs.length - 1, Math.floor(p * xs.length))];

async function main() {
  const model = await startModel();
  const db = process.env.DATABASE_URL;
  const env = { LLM_PROVIDER: 'openai', LLM_BASE_URL: `http://127.0.0.1:${model.port}/v1`, LLM_MODEL: 'bench', TWO_STAGE_ENABLED: 'true', ...(db ? { DATABASE_URL: db } : {}) };
  const [pa, pb] = [await freePort(), await freePort()];
  const children: ChildProcess[] = [];
  try {
    children.push(await startOrion(pa, env));
    if (db) children.push(await startOrion(pb, env));
    const b = db ? pb : pa;
    const done: number[] = [];
    const upstream: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      const r = await oneRun(pa, b, model);
      done.push(r.done);
      if (!Number.isNaN(r.upstream)) upstream.push(r.upstream);
    }
    done.sort((x, y) => x - y);
    upstream.sort((x, y) => x - y);
    console.log(`cancel latency, ${RUNS} runs, ${db ? 'instance B -> instance A on one PostgreSQL' : 'one embedded instance (set DATABASE_URL for two)'}`);
    console.log(`  until done{cancelled} on A's stream: p50 ${q(done, 0.5)} ms · p95 ${q(done, 0.95)} ms · max ${done.at(-1)} ms`);
    console.log(`  until the model request was closed:  p50 ${q(upstream, 0.5)} ms · p95 ${q(upstream, 0.95)} ms · max ${upstream.at(-1)} ms (${upstream.length}/${RUNS} seen)`);
    console.log(`  target p95 ≤ 1000 ms: ${q(done, 0.95) <= 1000 ? 'met' : 'NOT met'}`);
    new BenchReport(
      'run-control',
      'Cancel latency across instances: a run streams on instance A, `POST /api/chat/runs/:id/cancel` goes to instance B; measured until ' +
        "A's stream delivers done{cancelled} and until the model server sees A's request closed. Target: p95 ≤ 1000 ms. No floor run.",
      { runs: RUNS, instances: db ? 2 : 1, database: db ? 'PostgreSQL' : 'PGlite (one embedded instance)' },
    )
      .add('done.p50.ms', 'until done{cancelled} on the stream, p50', q(done, 0.5), 'ms')
      .add('done.p95.ms', 'until done{cancelled} on the stream, p95 (target ≤ 1000 ms)', q(done, 0.95), 'ms')
      .add('done.max.ms', 'until done{cancelled} on the stream, max', done.at(-1) ?? null, 'ms')
      .add('upstream.p50.ms', 'until the model request was closed, p50', q(upstream, 0.5) ?? null, 'ms')
      .add('upstream.p95.ms', 'until the model request was closed, p95', q(upstream, 0.95) ?? null, 'ms')
      .add('upstream.max.ms', 'until the model request was closed, max', upstream.at(-1) ?? null, 'ms')
      .add('upstream.seen', 'runs whose model request was seen closed', upstream.length, '')
      .write();
  } finally {
    for (const c of children) c.kill('SIGTERM');
    model.close();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
