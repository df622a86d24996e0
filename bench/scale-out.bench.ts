/**
 * DATABASE_URL=postgres://… npm run bench:scale-out [-- --instances 1,2,3 --n 300 --route unified --timeout 180]
 *
 * Orion scaled out (issue 17, deliverable 4): 1, 2 and 3 built instances (`node dist/main.js`) on
 * one PostgreSQL behind a round-robin proxy (bench/load/round-robin-proxy.ts), the same fake model
 * and load client as bench:load (N concurrent turns, ~100 deltas 20 ms apart, one tool call per
 * turn). Per instance count: turns per second in all and per instance, its ratio to one
 * instance, added latency per chunk, CPU per turn (the instances, the proxy, PostgreSQL), and
 * the database's work per turn (commits, rows written, index and table scans as a count of the
 * reads). While the load runs, run control is tried across instances — a cancel sent to another
 * instance than the one streaming, a pause and a resume there, a reconnect there with
 * Last-Event-ID — and each says whether it worked and how long it took.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from 'pg';
import { pct, runLoad } from './load/client';
import { PgStats } from './load/pg-stats';
import { scratchDatabase } from './load/scratch-db';
import { statementsSent } from './load/orion-metrics';
import { cpuMs } from './load/proc';
import { forkHelper, makeWorkspace, startOrion, type Proc } from './load/processes';
import { readSseFrames } from '../test/support/sse-reader';
import { BenchReport } from './report';

const arg = (name: string, dflt: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : dflt;
};
const INSTANCES = arg('instances', '1,2,3').split(',').map(Number);
const N = Number(arg('n', '300'));
const ROUTE = arg('route', 'unified');
const TIMEOUT_MS = Number(arg('timeout', '180')) * 1000;
const RAMP_MS = Number(arg('ramp', '1000'));
const PATHS: Record<string, string> = { unified: '/api/chat/messages', 'two-stage': '/api/chat/messages_two_stage' };
const DIST = join(__dirname, '..', 'dist', 'main.js');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const f = (x: number | undefined, d = 1) => (x === undefined || Number.isNaN(x) ? '–' : x.toFixed(d));

if (INSTANCES.some((k) => !(k >= 1)) || !(N > 0) || !PATHS[ROUTE]) {
  console.error('usage: --instances 1,2,3 --n 300 --route unified|two-stage [--timeout s] [--ramp ms]');
  process.exit(2);
}

interface SseEvent {
  id: number;
  event: string;
  data: Record<string, unknown>;
}

/** Reads an SSE answer event by event; `onEvent` returning true stops reading (the connection is dropped). */
async function readSse(res: Response, onEvent: (e: SseEvent) => boolean | void): Promise<SseEvent[]> {
  const seen: SseEvent[] = [];
  // stopping early ends the iteration, which cancels the body (the connection is dropped)
  await readSseFrames(res.body as unknown as AsyncIterable<Uint8Array>, (f) => {
    const e: SseEvent = { id: Number(f.id ?? 0), event: f.event, data: JSON.parse(f.data || '{}') };
    seen.push(e);
    return onEvent(e) === true;
  });
  return seen;
}

const post = (port: number, path: string, body: unknown) => fetch(`http://127.0.0.1:${port}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

interface Probe {
  name: string;
  ok: boolean;
  ms: number;
  detail: string;
}

/** Cancel sent to instance B while instance A streams: until `done{cancelled}` reaches A's client. */
async function probeCancel(a: number, b: number): Promise<Probe> {
  let sentAt = 0;
  let id = '';
  const events = await readSse(await post(a, '/api/chat/messages', { content: 'probe: cancel me' }), (e) => {
    if (e.event === 'chunk' && !sentAt) {
      sentAt = performance.now();
      id = String(e.data.requestId);
      void post(b, `/api/chat/runs/${id}/cancel`, {});
    }
  });
  const done = events.at(-1);
  const ok = done?.event === 'done' && done.data.stopReason === 'cancelled';
  return { name: 'cancel via another instance', ok, ms: performance.now() - sentAt, detail: `ended with ${done?.event} ${String(done?.data.stopReason ?? '')}` };
}

/** Pause sent to instance B while A streams a two-stage turn, then resumed on B to its end. */
async function probePauseResume(a: number, b: number): Promise<Probe> {
  const t0 = performance.now();
  let id = '';
  let asked = false;
  const first = await readSse(await post(a, '/api/chat/messages_two_stage', { content: 'probe: pause me' }), (e) => {
    if (e.event === 'chunk' && !asked) {
      asked = true;
      id = String(e.data.requestId);
      void post(b, `/api/chat/runs/${id}/pause`, {});
    }
  });
  const paused = first.at(-1);
  if (paused?.event !== 'paused') return { name: 'pause + resume via another instance', ok: false, ms: performance.now() - t0, detail: `first leg ended with ${paused?.event}` };
  const second = await readSse(await post(b, '/api/chat/messages_two_stage/resume', { requestId: id, resumeFromPhaseIndex: paused.data.resumeFromPhaseIndex }), () => undefined);
  const done = second.at(-1);
  const gapFree = [...first, ...second].every((e, i, all) => i === 0 || e.id === all[i - 1].id + 1);
  const ok = done?.event === 'done' && done.data.stopReason === 'final_answer' && gapFree;
  return { name: 'pause + resume via another instance', ok, ms: performance.now() - t0, detail: `resumed leg ended with ${done?.event} ${String(done?.data.stopReason ?? '')}; seq gap-free: ${gapFree}` };
}

/** A detached turn on A whose client leaves after 5 chunks, followed on B from its Last-Event-ID. */
async function probeReconnect(a: number, b: number): Promise<Probe> {
  const t0 = performance.now();
  let chunks = 0;
  const first = await readSse(await post(a, '/api/chat/messages', { content: 'probe: reconnect', options: { detach: true } }), (e) => e.event === 'chunk' && ++chunks >= 5);
  const last = first.at(-1)!;
  const id = String(first[0].data.requestId);
  const res = await fetch(`http://127.0.0.1:${b}/api/chat/runs/${id}/events`, { headers: { 'last-event-id': String(last.id) } });
  const rest = await readSse(res, () => undefined);
  const done = rest.at(-1);
  const gapFree = rest[0]?.id === last.id + 1 && rest.every((e, i) => i === 0 || e.id === rest[i - 1].id + 1);
  const ok = done?.event === 'done' && done.data.stopReason === 'final_answer' && gapFree;
  return { name: 'reconnect to another instance (Last-Event-ID)', ok, ms: performance.now() - t0, detail: `${rest.length} events after id ${last.id}; ended with ${done?.event}; gap-free: ${gapFree}` };
}

async function dbWork(url: string): Promise<{ commits: number; rows: number; scans: number }> {
  const c = new Client({ connectionString: url });
  await c.connect();
  try {
    const [t] = (await c.query(`SELECT coalesce(sum(n_tup_ins + n_tup_upd + n_tup_del), 0)::bigint AS rows, coalesce(sum(coalesce(idx_scan, 0) + seq_scan), 0)::bigint AS scans FROM pg_stat_user_tables`)).rows;
    const [d] = (await c.query(`SELECT xact_commit::bigint AS commits FROM pg_stat_database WHERE datname = current_database()`)).rows;
    return { commits: Number(d.commits), rows: Number(t.rows), scans: Number(t.scans) };
  } finally {
    await c.end();
  }
}

async function main() {
  const url = process.env.DATABASE_URL;
  if (!url) {
    console.error('bench:scale-out needs DATABASE_URL (PostgreSQL): the instances share one database.');
    process.exit(2);
  }
  const model = await forkHelper(join(__dirname, 'load', 'fake-model.ts'), {});
  const workspace = makeWorkspace();
  // no per-instance turn cap: the bench compares capacity, not the protective limit
  const env = { LLM_PROVIDER: 'openai', LLM_BASE_URL: `http://127.0.0.1:${model.port}/v1`, LLM_MODEL: 'fake', LLM_API_KEY: 'bench-key', TWO_STAGE_ENABLED: 'true', WORKSPACE_ROOT: workspace, MAX_CONCURRENT_TURNS: '100000' };
  console.log(`scale-out: ${INSTANCES.join(', ')} instance(s) on one PostgreSQL behind a round-robin proxy; N = ${N} concurrent ${ROUTE} turns started over ${RAMP_MS} ms; run timeout ${TIMEOUT_MS / 1000} s`);
  const rows: string[] = [];
  const probes: string[] = [];
  let oneInstanceRate = Number.NaN;
  try {
    for (const k of INSTANCES) {
      const orions: Proc[] = [];
      let proxy: Proc | undefined;
      // each instance count on a new database of its own (bench/load/scratch-db.ts)
      const scratch = await scratchDatabase(url);
      let pg: PgStats | undefined;
      try {
        pg = await PgStats.connect(scratch.url);
        for (let i = 0; i < k; i++) orions.push(await startOrion(DIST, { ...env, DATABASE_URL: scratch.url }));
        proxy = await forkHelper(join(__dirname, 'load', 'round-robin-proxy.ts'), { PROXY_BACKENDS: orions.map((o) => o.port).join(',') });
        await runLoad({ port: proxy.port, path: PATHS[ROUTE], n: 2 * k, rampMs: 0, timeoutMs: 30_000 });
        await sleep(1000);
        const cpu0 = orions.map((o) => cpuMs(o.pid));
        const proxyCpu0 = cpuMs(proxy.pid);
        const [pg0, db0, st0] = [await pg.snapshot(), await dbWork(scratch.url), await Promise.all(orions.map((o) => statementsSent(o.port)))];
        const loading = runLoad({ port: proxy.port, path: PATHS[ROUTE], n: N, rampMs: RAMP_MS, timeoutMs: TIMEOUT_MS });
        // run control across instances while the load runs (one instance: on itself)
        await sleep(RAMP_MS / 2);
        const [a, b] = [orions[0].port, orions[orions.length - 1].port];
        const tried = await Promise.all([probeCancel(a, b), probePauseResume(a, b), probeReconnect(a, b)]);
        const load = await loading;
        const pgCpu1 = await pg.backendCpuNow();
        const cpu = orions.reduce((s, o, i) => s + cpuMs(o.pid) - cpu0[i], 0);
        const proxyCpu = cpuMs(proxy.pid) - proxyCpu0;
        const statements = (await Promise.all(orions.map((o) => statementsSent(o.port)))).reduce((sum, n, i) => sum + n - st0[i], 0);
        await sleep(1500); // table statistics are flushed at most once a second
        const db1 = await dbWork(scratch.url);
        const turns = Math.max(1, load.completed + load.errors);
        const rate = (load.completed * 1000) / load.wallMs;
        if (k === 1) oneInstanceRate = rate;
        rows.push(
          `| ${k} | ${load.completed} | ${load.errors} | ${f(rate)} | ${f(rate / k)} | ${k === 1 || Number.isNaN(oneInstanceRate) ? '1.0' : f(rate / oneInstanceRate, 2)}× | ${f(pct(load.latenciesMs, 0.5))} | ${f(pct(load.latenciesMs, 0.99))} | ${f(pct(load.openMs, 0.5), 0)} / ${f(pct(load.openMs, 0.99), 0)} | ${f(cpu / turns)} | ${f(proxyCpu / turns)} | ${f(PgStats.backendCpuDelta(pg0, pgCpu1) / turns)} | ${f((db1.commits - db0.commits) / turns, 0)} | ${f(statements / turns, 1)} | ${f((db1.rows - db0.rows) / turns, 0)} | ${f((db1.scans - db0.scans) / turns, 0)} |`,
        );
        for (const e of load.errorSamples) rows.push(`|   error sample: ${e.replace(/\|/g, '/')} |`);
        for (const p of tried) probes.push(`| ${k} | ${p.name} | ${p.ok ? 'yes' : '**no**'} | ${f(p.ms, 0)} | ${p.detail} |`);
      } finally {
        await proxy?.stop();
        for (const o of orions) await o.stop();
        await pg?.close();
        await scratch.drop();
      }
    }
  } finally {
    await model.stop();
    rmSync(workspace, { recursive: true, force: true });
  }
  const header =
    '| instances | done | errors | turns/s | turns/s per instance | × one instance | +lat/chunk p50 ms | p99 ms | open p50 / p99 ms | Orion CPU ms/turn (all instances) | proxy CPU ms/turn | PG CPU ms/turn | commits/turn | statements/turn | rows written/turn | scans/turn |';
  console.log(header);
  console.log('|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const r of rows) console.log(r);
  console.log('\nrun control across instances, during the load:\n');
  console.log('| instances | what | worked | ms | detail |');
  console.log('|---:|---|---|---:|---|');
  for (const p of probes) console.log(p);
  const cellsOf = (line: string) => line.split('|').slice(1, -1).map((c) => c.trim());
  new BenchReport(
    'scale-out',
    'One, two and three built instances on one PostgreSQL behind a round-robin proxy, N concurrent turns (the load bench\'s fake model ' +
      'and client): turns per second and its ratio to one instance (the floor here), latency per chunk, CPU and database work per turn; ' +
      'and run control (cancel, pause/resume, reconnect) tried across instances during the load.',
    { instances: INSTANCES, n: N, route: ROUTE, rampMs: RAMP_MS, timeoutSeconds: TIMEOUT_MS / 1000 },
  )
    .table('throughput', 'Per instance count', cellsOf(header), rows.map(cellsOf))
    .table('run-control', 'Run control across instances, during the load', ['instances', 'what', 'worked', 'ms', 'detail'], probes.map(cellsOf), 2)
    .write();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
