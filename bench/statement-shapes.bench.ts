/**
 * [DATABASE_URL=postgres://…] npm run bench:statements [-- --rows 20,60,200 --rounds 200]
 *
 * The grouped event write (RunEventRepository.appendFencedMany: many runs' rows, each fenced by
 * its run's lease) in the shapes it has had, on the real schema (migrations) of embedded PGlite
 * in memory and, with DATABASE_URL, of a new PostgreSQL database on that server:
 *   - VALUES: the previous shape, a VALUES list with six placeholders per row;
 *   - jsonb, unnamed: the rows as one jsonb parameter (jsonRows), a fixed text parsed every time
 *     (what DATABASE_PREPARED_STATEMENTS=false sends);
 *   - jsonb, prepared: the same, as a named prepared statement (the default; Orion's own code);
 *   - floor: the least SQL doing the same insert: the same rows from one jsonb parameter, no
 *     lease check and no progress update, unnamed.
 * PostgreSQL runs on a scratch database (bench/load/scratch-db.ts), skipped without CREATEDB.
 * Each shape writes rows of ~500 bytes (two chunk envelopes, as a loaded turn's writes carry),
 * spread over 300 running runs, the shapes interleaved round by round. Printed per statement:
 * the database's CPU (PostgreSQL: the connection's backend, /proc/<pid>/schedstat; PGlite runs inside this
 * process, so the statement's wall time, client work included) and this process's CPU.
 */
import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { DataSource } from 'typeorm';
import { jsonRows, RawJson } from '../src/database/json-rows';
import { openDatabase } from '../src/database/data-source';
import { RunEventEntity } from '../src/runs/entities/run-event.entity';
import { appendManyStatement, RunEventRepository, type FencedAppend } from '../src/runs/repositories/run-event.repository';
import { readFileSync } from 'node:fs';
import { scratchDatabase } from './load/scratch-db';
import { BenchReport } from './report';

const arg = (name: string, dflt: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : dflt;
};
const ROW_COUNTS = arg('rows', '20,60,200').split(',').map(Number);
const ROUNDS = Number(arg('rounds', '200'));
const RUNS = 300;
const OWNER = 'bench-instance';
const report = new BenchReport(
  'statements',
  "The grouped event write (RunEventRepository.appendFencedMany) in the shapes it has had, on the real schema of embedded PGlite and " +
    'of a new PostgreSQL database: the database CPU per statement. Floor: the least SQL doing the same insert (one jsonb parameter, ' +
    'no lease check, no progress update).',
  { rows: ROW_COUNTS, rounds: ROUNDS, runs: RUNS, postgres: Boolean(process.env.DATABASE_URL) },
);

/** CPU time of a process in ms from /proc/<pid>/schedstat (nanoseconds; /proc/<pid>/stat counts 10 ms ticks) */
function cpuNs(pid: number): number {
  return Number(readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[0]) / 1e6;
}

interface Shape {
  name: string;
  write(appends: FencedAppend[]): Promise<unknown>;
}

/** The VALUES shape as it was before (six placeholders a row; the same lease, progress and RETURNING). */
async function valuesShape(ds: DataSource, appends: FencedAppend[]): Promise<unknown> {
  const params: unknown[] = [];
  const tuples: string[] = [];
  for (const a of appends)
    for (const r of a.rows) {
      params.push(a.requestId, a.owner, r.seq, r.seq + 1, 'chunks', r.json);
      const i = params.length;
      tuples.push(`($${i - 5}::uuid, $${i - 4}::text, $${i - 3}::int, $${i - 2}::int, $${i - 1}::text, $${i}::jsonb)`);
    }
  return ds.query(appendManyStatement(`v(request_id, owner, seq, last_seq, type, data) AS (VALUES ${tuples.join(', ')})`), params);
}

/** The floor: the same rows inserted from one parameter, nothing checked. */
async function floorShape(ds: DataSource, appends: FencedAppend[]): Promise<unknown> {
  const rows = appends.flatMap((a) => a.rows.map((r) => [a.requestId, r.seq, r.seq + 1, 'chunks', new RawJson(r.json!)]));
  return ds.query(
    `INSERT INTO run_events (request_id, seq, last_seq, type, data)
     SELECT (e->>0)::uuid, (e->>1)::int, (e->>2)::int, e->>3, e->4 FROM jsonb_array_elements($1::jsonb) AS e`,
    [jsonRows(rows)],
  );
}

/** One database on one connection, with 300 running runs leased to OWNER. */
async function open(url: string | undefined): Promise<{ ds: DataSource; runs: string[]; close(): Promise<void> }> {
  const dir = `/tmp/orion-bench-statements-${process.pid}`;
  const target = await openDatabase(url ?? 'memory://', dir);
  const ds = new DataSource({ ...target.options, entities: [RunEventEntity], poolSize: 1 } as never);
  await ds.initialize();
  const [{ id: conversationId }] = await ds.query(`INSERT INTO conversations (project_id, title) VALUES ('bench', 'bench') RETURNING id`);
  const runs = Array.from({ length: RUNS }, () => randomUUID());
  await ds.query(
    `INSERT INTO runs (request_id, conversation_id, project_id, protocol, status, lease_owner)
     SELECT id, $1, 'bench', 'unified', 'running', $2 FROM unnest($3::uuid[]) AS id`,
    [conversationId, OWNER, runs],
  );
  return {
    ds,
    runs,
    close: async () => {
      await ds.destroy();
      await target.pglite?.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

const envelope = (requestId: string, seq: number) =>
  JSON.stringify({ requestId, projectId: 'bench', conversationId: '3f1c1d7e-3a43-4b51-9f43-1c2d3e4f5a6b', seq, phase: 'answer', phaseIndex: 2, cycleIndex: 1, content: `${(Date.now() + seq / 1000).toFixed(3)} ` });

async function measure(kind: 'pglite' | 'postgres', url: string | undefined): Promise<void> {
  const { ds, runs, close } = await open(url);
  // the setting preparedQuery reads (DATABASE_PREPARED_STATEMENTS), switched per shape on the one connection
  const setPrepared = (on: boolean) => ((ds.options as unknown as { extra: { preparedStatements: boolean } }).extra.preparedStatements = on);
  const repo = new RunEventRepository(ds.getRepository(RunEventEntity));
  const nextSeq = new Map<string, number>();
  let cursor = 0;
  /** `n` rows, each two chunk envelopes, spread over the runs as concurrent turns' writes are */
  const batch = (n: number): FencedAppend[] => {
    const byRun = new Map<string, FencedAppend>();
    for (let i = 0; i < n; i++) {
      const requestId = runs[cursor++ % RUNS];
      const seq = (nextSeq.get(requestId) ?? 0) + 1;
      nextSeq.set(requestId, seq + 1);
      const a = byRun.get(requestId) ?? { requestId, owner: OWNER, rows: [] };
      // two consecutive chunks: packRows stores them as one row, as the real writes do
      a.rows.push({ seq, type: 'chunk', data: {}, json: envelope(requestId, seq) }, { seq: seq + 1, type: 'chunk', data: {}, json: envelope(requestId, seq + 1) });
      byRun.set(requestId, a);
    }
    return [...byRun.values()];
  };
  const asValues = (appends: FencedAppend[]): FencedAppend[] => appends.map((a) => ({ ...a, rows: a.rows.filter((_, i) => i % 2 === 0).map((r) => ({ ...r, json: `[${r.json},${envelope(a.requestId, r.seq + 1)}]` })) }));
  const shapes: Shape[] = [
    { name: 'VALUES (before)', write: (a) => valuesShape(ds, asValues(a)) },
    { name: 'jsonb, unnamed', write: (a) => (setPrepared(false), repo.appendFencedMany(a)) },
    { name: 'jsonb, prepared (default)', write: (a) => (setPrepared(true), repo.appendFencedMany(a)) },
    { name: 'floor: insert alone', write: (a) => floorShape(ds, asValues(a)) },
  ];
  const pid = kind === 'postgres' ? Number((await ds.query('SELECT pg_backend_pid() AS p'))[0].p) : 0;
  console.log(`\n${kind}: grouped event write, ${ROUNDS} statements per shape and size (rows of two chunk envelopes, ~${envelope(runs[0], 1).length * 2 + 80} bytes)`);
  const header =
    kind === 'postgres'
      ? ['rows', 'shape', 'PostgreSQL CPU ms/stmt', 'µs/row', 'this process CPU ms/stmt', '× floor']
      : ['rows', 'shape', 'ms/stmt (PGlite in this process: wall time, client work included)', 'µs/row', '–', '× floor'];
  const printed: string[][] = [];
  console.log(`| ${header.join(' | ')} |`);
  console.log('|---:|---|---:|---:|---:|---:|');
  for (const rows of ROW_COUNTS) {
    const db = new Map<string, number>();
    const own = new Map<string, number>();
    for (let round = 0; round < ROUNDS; round++) {
      for (const s of shapes) {
        const appends = batch(rows);
        const [c0, b0, t0] = [process.cpuUsage(), pid ? cpuNs(pid) : 0, performance.now()];
        await s.write(appends);
        const wall = performance.now() - t0;
        const c = process.cpuUsage(c0);
        const dbMs = pid ? cpuNs(pid) - b0 : wall;
        db.set(s.name, (db.get(s.name) ?? 0) + dbMs);
        own.set(s.name, (own.get(s.name) ?? 0) + (c.user + c.system) / 1000);
      }
    }
    const floor = db.get('floor: insert alone')! / ROUNDS;
    // what the README cites: how much less database time than the VALUES statement before
    const before = db.get('VALUES (before)')!;
    for (const [name, key] of [['jsonb, prepared (default)', 'prepared'], ['jsonb, unnamed', 'unnamed']]) {
      const less = (1 - db.get(name)! / before) * 100;
      console.log(`  ${rows} rows, ${name}: ${less.toFixed(0)} % less database time than VALUES (before)`);
      report.add(`${kind}.${rows}.${key}.less-than-values.pct`, `${kind}, ${rows} rows: ${name}, database time saved against VALUES (before)`, less, '%');
    }
    for (const s of shapes) {
      const ms = db.get(s.name)! / ROUNDS;
      const cells = [String(rows), s.name, ms.toFixed(2), ((ms / rows) * 1000).toFixed(0), pid ? (own.get(s.name)! / ROUNDS).toFixed(2) : '–', `${(ms / floor).toFixed(2)}×`];
      console.log(`| ${cells.join(' | ')} |`);
      printed.push(cells);
    }
  }
  report.table(kind, kind === 'postgres' ? 'PostgreSQL' : 'PGlite in memory', header, printed, 2);
  await close();
}

async function main(): Promise<void> {
  await measure('pglite', undefined);
  const url = process.env.DATABASE_URL;
  if (!url || !/^postgres(ql)?:\/\//.test(url)) {
    console.log('\nDATABASE_URL is not set: the PostgreSQL rows are skipped.');
    report.write();
    return;
  }
  // never in place: the bench leaves 300 leased runs and their events behind
  const scratch = await scratchDatabase(url, { inPlace: false });
  if (!scratch) return void report.write();
  try {
    await measure('postgres', scratch.url);
  } finally {
    await scratch.drop();
  }
  report.write();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
