/**
 * npm run bench:load [-- --n 100,300,1000 --db pglite,postgres --route unified,two-stage --timeout 180 --deltas 90 --no-floor --no-stack --warmup 2 --report load]
 *
 * Orion under load on one process (issue 17): the built service (`node dist/main.js`), a fake
 * OpenAI-compatible model in its own process (bench/load/fake-model.ts: ~100 deltas 20 ms apart,
 * one list_files call per turn), N concurrent turns per chat route, on embedded PGlite and on
 * PostgreSQL (a new database per run on DATABASE_URL's server; skipped without it), and in the same run the floor: a minimal relay
 * of the same turn (bench/load/floor-relay.ts), and the stack floor: the same turn in the least code
 * on Orion's own stack, NestJS + the openai SDK, without a database and with its events stored in
 * each database measured (bench/load/stack-floor.ts). Every run starts a fresh process. N values run
 * in ascending order, so the largest runs come last. Columns are explained in bench/README.md.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pct, runLoad, type LoadResult } from './load/client';
import { metricsLagP99, statementsSent } from './load/orion-metrics';
import { PgStats } from './load/pg-stats';
import { scratchDatabase } from './load/scratch-db';
import { cpuMs, io, rssBytes, rssPeak } from './load/proc';
import { forkHelper, makeWorkspace, startOrion, type Proc } from './load/processes';
import { BenchReport } from './report';

const arg = (name: string, dflt: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : dflt;
};
const NS = arg('n', '100,300,1000').split(',').map(Number);
const DBS = arg('db', 'pglite,postgres').split(',');
const ROUTES = arg('route', 'unified,two-stage').split(',');
const TIMEOUT_MS = Number(arg('timeout', '180')) * 1000;
const RAMP_MS = Number(arg('ramp', '1000'));
const FLOOR = !process.argv.includes('--no-floor');
const STACK = !process.argv.includes('--no-stack');
/** turns run before each measured load (2: the code paths are loaded; more: the process is warm, its code optimized) */
const WARMUP = Number(arg('warmup', '2'));
/** the result file's name (bench/results/<name>.json): a sweep for MAX_CONCURRENT_TURNS keeps its own beside the full run's */
const REPORT = arg('report', 'load');
/** text deltas of the turn's second model answer (the first has 10 and the tool call): fixed vs per-event cost */
const DELTAS = Number(arg('deltas', '90'));
/** LOAD_PG_STATEMENTS=<k>: print the k statements costing PostgreSQL most per turn under each Orion row (pg_stat_statements) */
const TOP_STATEMENTS = Number(process.env.LOAD_PG_STATEMENTS ?? 0);
const PATHS: Record<string, string> = { unified: '/api/chat/messages', 'two-stage': '/api/chat/messages_two_stage', floor: '/' };
const DIST = join(__dirname, '..', 'dist', 'main.js');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/**
 * How long a backend may keep the table and database statistics of its last transactions: a busy
 * one sends them at most once a second, an idle one after up to 10 s (PostgreSQL's
 * PGSTAT_IDLE_INTERVAL). Read sooner, rows/turn and commits/turn miss the end of the load.
 */
const PG_STATS_WAIT_MS = 11_000;
/** the p99 added latency per chunk a user should not feel (issue 35): where each system crosses it is printed at the end */
const P99_LIMIT_MS = 100;
const HEADER =
  '| system | route | N | done | errors | +lat/chunk p50 ms | p99 ms | open p50 / p99 ms | turn p50 / p99 s | loop p99 ms | RSS idle MB | KB per open stream | CPU ms/turn | PG CPU ms/turn | rows/turn | commits/turn | statements/turn | KB/turn WAL / DB size / PGlite files | write syscalls/turn | client reads/turn | SSE KB/turn | turns/s | CPU / p50 / p99 / KB × relay | CPU / p50 / p99 / KB × stack floor |';
/** the printed table's cells, for the result file */
const printed: string[][] = [];
const cellsOf = (line: string) => line.split('|').slice(1, -1).map((c) => c.trim());

if (!(DELTAS >= 1) || !(WARMUP >= 1) || NS.some((n) => !(n > 0)) || DBS.some((d) => !['pglite', 'postgres'].includes(d)) || ROUTES.some((r) => !PATHS[r]) || !/^load(-[a-z0-9-]+)?$/.test(REPORT)) {
  console.error('usage: --n 100,300,1000 --db pglite,postgres --route unified,two-stage [--timeout s] [--ramp ms] [--deltas 90] [--no-floor] [--no-stack] [--warmup 2] [--report load-<name>]');
  process.exit(2);
}

interface Row {
  system: string;
  route: string;
  n: number;
  load: LoadResult;
  loopP99Ms: number;
  idleRss: number;
  perStreamKb: number;
  cpuPerTurn: number;
  pgCpuPerTurn?: number;
  rowsPerTurn?: number;
  commitsPerTurn?: number;
  statementsPerTurn?: number;
  dbKbPerTurn?: number;
  walKbPerTurn?: number;
  storageKbPerTurn?: number;
  writesPerTurn: number;
  /** LOAD_PG_STATEMENTS: the table of the costliest statements, printed under the row */
  topStatements?: string[];
}

/** One measured run against a started process: warm-up, idle readings, the load, the deltas. */
async function measure(system: string, route: string, n: number, p: Proc, lagP99: () => Promise<number>, pg?: PgStats, statements?: () => Promise<number>): Promise<Row> {
  await runLoad({ port: p.port, path: PATHS[route], n: WARMUP, rampMs: WARMUP > 2 ? RAMP_MS : 0, timeoutMs: 60_000 });
  // PostgreSQL: the warm-up's table statistics must be in before the first reading (PG_STATS_WAIT_MS)
  await sleep(pg ? PG_STATS_WAIT_MS : 1000);
  const idleRss = rssBytes(p.pid);
  const st0 = await statements?.();
  await lagP99(); // resets the delay histogram (any scrape of /metrics does)
  const topStatements = pg && statements && TOP_STATEMENTS > 0 && (await pg.resetStatements());
  const [cpu0, io0, pg0] = [cpuMs(p.pid), io(p.pid), await pg?.snapshot()];
  const peak = rssPeak(p.pid);
  const load = await runLoad({ port: p.port, path: PATHS[route], n, rampMs: RAMP_MS, timeoutMs: TIMEOUT_MS });
  const peakRss = peak.stop();
  const [cpu1, io1, pgCpu1] = [cpuMs(p.pid), io(p.pid), await pg?.backendCpuNow()];
  const loopP99Ms = await lagP99();
  // after the delay histogram was read: every scrape of /metrics resets it
  const st1 = await statements?.();
  const turns = Math.max(1, load.completed + load.errors);
  const row: Row = { system, route, n, load, loopP99Ms, idleRss, perStreamKb: (peakRss - idleRss) / 1024 / Math.max(1, load.maxInFlight), cpuPerTurn: (cpu1 - cpu0) / turns, writesPerTurn: (io1.syscw - io0.syscw) / turns };
  if (st0 !== undefined && st1 !== undefined) row.statementsPerTurn = (st1 - st0) / turns;
  if (system === 'Orion pglite') row.storageKbPerTurn = (io1.writeBytes - io0.writeBytes) / 1024 / turns;
  if (pg && pg0 && pgCpu1) {
    await sleep(PG_STATS_WAIT_MS);
    const pg1 = await pg.snapshot();
    row.pgCpuPerTurn = PgStats.backendCpuDelta(pg0, pgCpu1) / turns;
    row.rowsPerTurn = (pg1.rows - pg0.rows) / turns;
    row.commitsPerTurn = (pg1.commits - pg0.commits) / turns;
    row.dbKbPerTurn = (pg1.dbBytes - pg0.dbBytes) / 1024 / turns;
    row.walKbPerTurn = (await pg.walBytesSince(pg0.walLsn)) / 1024 / turns;
    if (topStatements) row.topStatements = await pg.topStatements(turns, TOP_STATEMENTS);
  }
  return row;
}

const f = (x: number | undefined, d = 1) => (x === undefined || Number.isNaN(x) ? '–' : x.toFixed(d));

const cpuAll = (row: Row) => row.cpuPerTurn + (row.pgCpuPerTurn ?? 0);

/** One ratio cell: `x` of the row / the same of a floor row ("–" when the floor's is 0 or unknown). */
const times = (x: number, floorX: number) => (floorX > 0 && Number.isFinite(x / floorX) ? `${f(x / floorX)}×` : '–');

/**
 * The row against a floor measured in the same run: CPU per turn (with the database's), p50 and
 * p99 added latency per chunk, KB per open stream, each as row / floor.
 */
function against(row: Row, floor: Row | undefined): string {
  if (!floor || floor === row) return '';
  const [l, fl] = [row.load.latenciesMs, floor.load.latenciesMs];
  return [times(cpuAll(row), cpuAll(floor)), times(pct(l, 0.5), pct(fl, 0.5)), times(pct(l, 0.99), pct(fl, 0.99)), times(row.perStreamKb, floor.perStreamKb)].join(' / ');
}

/** p99 added latency per chunk by system and route, in ascending N: where it crosses 100 ms (crossings) */
const p99s = new Map<string, Array<{ n: number; p99: number; turnsPerS: number }>>();

/** `floor`: the relay's row at the same N; `stack`: the stack floor's on the same database */
function print(row: Row, floor?: Row, stack?: Row): void {
  const l = row.load;
  const turns = Math.max(1, l.completed + l.errors);
  const ratio = ` | ${against(row, floor)} | ${against(row, stack)}`;
  const key = row.route === 'floor' ? row.system : `${row.system} ${row.route}`;
  p99s.set(key, [...(p99s.get(key) ?? []), { n: row.n, p99: pct(l.latenciesMs, 0.99), turnsPerS: (l.completed * 1000) / l.wallMs }]);
  const line =
    `| ${row.system} | ${row.route} | ${row.n} | ${l.completed} | ${l.errors} | ${f(pct(l.latenciesMs, 0.5))} | ${f(pct(l.latenciesMs, 0.99))} | ${f(pct(l.openMs, 0.5), 0)} / ${f(pct(l.openMs, 0.99), 0)} | ${f(pct(l.turnMs, 0.5) / 1000, 2)} / ${f(pct(l.turnMs, 0.99) / 1000, 2)} | ${f(row.loopP99Ms)} | ${f(row.idleRss / 1048576, 0)} | ${f(row.perStreamKb, 0)} | ${f(row.cpuPerTurn)} | ${f(row.pgCpuPerTurn)} | ${f(row.rowsPerTurn, 0)} | ${f(row.commitsPerTurn, 0)} | ${f(row.statementsPerTurn)} | ${f(row.walKbPerTurn, 0)} / ${f(row.dbKbPerTurn, 0)} / ${f(row.storageKbPerTurn, 0)} | ${f(row.writesPerTurn, 0)} | ${f(l.dataEvents / turns, 0)} | ${f(l.sseBytes / turns / 1024)} | ${f((l.completed * 1000) / l.wallMs)}${ratio} |`;
  console.log(line);
  printed.push(cellsOf(line));
  for (const e of l.errorSamples) console.log(`|   error sample: ${e.replace(/\|/g, '/')} |`);
  if (row.topStatements) console.log(`\nPostgreSQL statements of ${row.system} ${row.route} N = ${row.n}, per turn:\n${row.topStatements.join('\n')}\n`);
}

/** The floors' event-loop delay p99 since the last reading (their `GET /stats`). */
const floorLagP99 = (port: number) => async () => ((await (await fetch(`http://127.0.0.1:${port}/stats`)).json()) as { eventLoopP99Ms: number }).eventLoopP99Ms;

/**
 * Runs `fn` on the database a row measures: on PostgreSQL a new database of its own on
 * DATABASE_URL's server (bench/load/scratch-db.ts), with its statistics reader, both gone after.
 */
async function onDatabase<T>(db: string, url: string | undefined, fn: (scratchUrl: string | undefined, pg: PgStats | undefined) => Promise<T>): Promise<T> {
  const scratch = db === 'postgres' ? await scratchDatabase(url!) : undefined;
  let pg: PgStats | undefined;
  try {
    pg = scratch ? await PgStats.connect(scratch.url) : undefined;
    return await fn(scratch?.url, pg);
  } finally {
    await pg?.close();
    await scratch?.drop();
  }
}

async function main() {
  const url = process.env.DATABASE_URL;
  const dbs = DBS.filter((d) => d !== 'postgres' || url);
  if (dbs.length < DBS.length) console.log('DATABASE_URL is not set: the PostgreSQL runs are skipped.');
  const model = await forkHelper(join(__dirname, 'load', 'fake-model.ts'), { FAKE_MODEL_FINAL_DELTAS: String(DELTAS) });
  const workspace = makeWorkspace();
  // no per-instance turn cap (MAX_CONCURRENT_TURNS, 50 by default): the bench measures capacity
  const orionEnv = { LLM_PROVIDER: 'openai', LLM_BASE_URL: `http://127.0.0.1:${model.port}/v1`, LLM_MODEL: 'fake', LLM_API_KEY: 'bench-key', TWO_STAGE_ENABLED: 'true', WORKSPACE_ROOT: workspace, MAX_CONCURRENT_TURNS: '100000' };
  // the relay's and the stack floor's model and workspace
  const floorEnv = { FLOOR_MODEL_URL: `http://127.0.0.1:${model.port}/v1`, FLOOR_WORKSPACE: join(workspace, 'default') };
  console.log(`load: N = ${NS.join(', ')}; ${dbs.join(', ')}; ${ROUTES.join(', ')}; turns started over ${RAMP_MS} ms; ${10 + DELTAS} text deltas per turn; run timeout ${TIMEOUT_MS / 1000} s`);
  console.log(HEADER);
  console.log('|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|');
  try {
    for (const n of NS) {
      let floor: Row | undefined;
      if (FLOOR) {
        const relay = await forkHelper(join(__dirname, 'load', 'floor-relay.ts'), floorEnv);
        try {
          floor = await measure('floor relay', 'floor', n, relay, floorLagP99(relay.port));
          print(floor);
        } finally {
          await relay.stop();
        }
      }
      const stacks: Record<string, Row | undefined> = {};
      if (STACK)
        for (const db of ['none', ...dbs])
          stacks[db] = await onDatabase(db, url, async (scratchUrl, pg) => {
            const env: Record<string, string> = { ...floorEnv };
            if (scratchUrl) env.STACK_FLOOR_DATABASE_URL = scratchUrl;
            const pgliteDir = db === 'pglite' ? mkdtempSync(join(tmpdir(), 'orion-stack-floor-')) : undefined;
            if (pgliteDir) env.STACK_FLOOR_PGLITE_DIR = pgliteDir;
            try {
              const stack = await forkHelper(join(__dirname, 'load', 'stack-floor.ts'), env);
              try {
                const row = await measure(db === 'none' ? 'stack floor' : `stack floor ${db}`, 'floor', n, stack, floorLagP99(stack.port), pg);
                print(row, floor);
                return row;
              } finally {
                await stack.stop();
              }
            } finally {
              if (pgliteDir) rmSync(pgliteDir, { recursive: true, force: true });
            }
          });
      for (const db of dbs)
        for (const route of ROUTES)
          await onDatabase(db, url, async (scratchUrl, pg) => {
            const orion = await startOrion(DIST, { ...orionEnv, ...(scratchUrl ? { DATABASE_URL: scratchUrl } : {}) });
            try {
              print(await measure(`Orion ${db}`, route, n, orion, () => metricsLagP99(orion.port), pg, () => statementsSent(orion.port)), floor, stacks[db]);
            } finally {
              await orion.stop();
            }
          });
    }
  } finally {
    await model.stop();
    rmSync(workspace, { recursive: true, force: true });
  }
  const crossingRows = crossings(P99_LIMIT_MS);
  for (const [system, text] of crossingRows) console.log(`${system}: ${text}`);
  const capacityRows = capacity(P99_LIMIT_MS);
  for (const [system, tps, ratio, largest] of capacityRows) console.log(`${system}: ${tps} turns/s at saturation (${ratio} the relay's), largest N with p99 < ${P99_LIMIT_MS} ms: ${largest}`);
  new BenchReport(
    REPORT,
    'N concurrent turns per chat route on the built service (one process) with a fake OpenAI-compatible model in its own process ' +
      '(deltas 20 ms apart, one tool call per turn), on embedded PGlite and PostgreSQL. Floors in the same run: a minimal relay of the ' +
      'same turn, and the stack floor (NestJS + the openai SDK, no database, or storing its events in each database). Columns: bench/README.md.',
    { n: NS, warmupTurns: WARMUP, databases: dbs, routes: ROUTES, rampMs: RAMP_MS, timeoutSeconds: TIMEOUT_MS / 1000, textDeltasPerTurn: 10 + DELTAS, floor: FLOOR, stackFloor: STACK },
  )
    .table('load', 'Per system, route and N', cellsOf(HEADER), printed, 3)
    .table('p99-crossing', 'Where p99 added latency per chunk crosses 100 ms', ['system', 'crossing'], crossingRows, 1)
    .table('capacity', 'Turns per second at saturation and the largest N with p99 under 100 ms', ['system', 'turns/s at saturation', '× relay', 'largest N with p99 < 100 ms'], capacityRows, 1)
    .write();
}

/**
 * Per system and route, the N between which p99 added latency per chunk goes over `limitMs`
 * ("p99 crosses 100 ms between N=300 and N=400"): what MAX_CONCURRENT_TURNS is chosen from
 * (bench/README.md). Needs several N in one run (--n 100,200,300,400,600).
 */
function crossings(limitMs: number): string[][] {
  const out: string[][] = [];
  for (const [system, points] of p99s) {
    const sorted = [...points].sort((a, b) => a.n - b.n);
    const over = sorted.findIndex((p) => p.p99 > limitMs);
    const text =
      over < 0
        ? `p99 stays under ${limitMs} ms up to N=${sorted.at(-1)!.n}`
        : over === 0
          ? `p99 is over ${limitMs} ms already at N=${sorted[0].n}`
          : `p99 crosses ${limitMs} ms between N=${sorted[over - 1].n} and N=${sorted[over].n}`;
    out.push([system, text]);
  }
  return out;
}

/**
 * Per system and route: turns per second at saturation (the most any N of the run reached: past
 * saturation more streams only wait longer), beside the relay's, and the largest N of the run
 * below which p99 added latency per chunk stayed under `limitMs` ('none' when even the smallest did not).
 */
function capacity(limitMs: number): string[][] {
  const best = (points: Array<{ turnsPerS: number }>) => Math.max(...points.map((p) => p.turnsPerS));
  const relay = p99s.get('floor relay');
  return [...p99s].map(([system, points]) => {
    // the N below the first one over the limit, as `crossings` reads them (a smaller N over it and a larger one under is noise, not capacity)
    const sorted = [...points].sort((a, b) => a.n - b.n);
    const over = sorted.findIndex((p) => p.p99 >= limitMs);
    const largest = over < 0 ? sorted.at(-1)!.n : over > 0 ? sorted[over - 1].n : 'none';
    return [system, f(best(points)), relay ? `${f(best(points) / best(relay), 2)}×` : '–', String(largest)];
  });
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
