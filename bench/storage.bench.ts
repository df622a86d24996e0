/**
 * npm run bench:storage (needs `nest build`; PostgreSQL rows need DATABASE_URL)
 *
 * A soak of the storage lifecycle (issue 43): two-stage turns at a steady rate for a set time
 * through the whole service (the scripted model: 240 text deltas, no delays), with compaction,
 * retention and the partition span scaled down to seconds; database bytes per table sampled once
 * a second; beside it, at the same time in a second process on a second database, the same soak
 * without retention (compaction on in both), for the added latency per chunk during purges with
 * the machine's noise falling on both alike (bench/support/storage-soak.ts); a sizing phase for
 * the bytes per completed turn before and after compaction (after VACUUM FULL), beside its floor:
 * the same events stored as one row per turn (the stack floor's storing,
 * bench/load/stack-floor.ts) in the same database. Writes docs/images/<report>.svg.
 *
 *   npm run bench:storage                                          # short: 60 s at 5 turns/s, retention 20 s
 *   npm run bench:storage -- --db postgres --turns 20000 --rate 9 --window 3m --partition 20s --report storage-soak
 *                                                                  # the issue's long soak (20,000 turns)
 */
import { fork } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { BenchReport, REPO_ROOT } from './report';
import { serviceInProcess } from './support/service-in-process';
import { scratch, sum, turn, type Soak, type SoakSettings } from './support/storage-soak';

/* eslint-disable @typescript-eslint/no-require-imports */
const { StorageMaintenanceService } = require('../dist/chat/storage-maintenance.service') as typeof import('../src/chat/storage-maintenance.service');
const { StorageStats, SIZED_TABLES } = require('../dist/database/storage-stats') as typeof import('../src/database/storage-stats');
const { parseDuration } = require('../dist/config/duration') as typeof import('../src/config/duration');
const { DataSource: DataSourceToken } = require('typeorm') as typeof import('typeorm');

const arg = (name: string, dflt: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : dflt;
};
const RATE = Number(arg('rate', '5'));
/** the soak's length: --seconds, or --turns at --rate (the turns started; a machine behind the rate completes them later) */
const SECONDS = process.argv.includes('--turns') ? Math.ceil(Number(arg('turns', '0')) / RATE) : Number(arg('seconds', '60'));
const WINDOW = arg('window', '20s');
const COMPACT = arg('compact', '2s');
/** PARTITION_INTERVAL of both soaks: a fraction of the window, so retention drops whole partitions */
const PARTITION = arg('partition', '10s');
/** turns of the sizing phase: at least 100, so the pages every table and index takes however few its rows weigh little */
/** STORAGE_VACUUM_EVERY of both soaks: as often as a partition span, scaled down with the retention as an operator would set it (docs/OPERATIONS.md, Storage) */
const VACUUM = arg('vacuum', PARTITION);
const SIZING_TURNS = Number(arg('sizing-turns', '100'));
if (!(SIZING_TURNS >= 100)) throw new Error(`--sizing-turns ${SIZING_TURNS}: at least 100 (a smaller sample counts a table's first pages as bytes per turn)`);
const DBS = arg('db', 'both');
/** the result file's name (bench/results/<report>.json): a long soak beside the short one */
const REPORT = arg('report', 'storage');
/** the picture of the size over time: one per report, so the long soak's and the short one's do not overwrite each other */
const PICTURE = `${REPORT}.svg`;

interface App {
  port: number;
  ds: DataSource;
  worker: InstanceType<typeof StorageMaintenanceService>;
  close(): Promise<void>;
}

async function boot(url: string, env: Record<string, string>): Promise<App> {
  // the same in-process service as bench:protocol and bench:loops, on this row's database
  const { app, port } = await serviceInProcess({ DATABASE_URL: url, ...env });
  return { port, ds: app.get(DataSourceToken), worker: app.get(StorageMaintenanceService), close: () => app.close() };
}

async function totalBytes(ds: DataSource): Promise<Record<string, number>> {
  return (await new StorageStats(ds, 0).sample()).bytes;
}

/** Bytes per completed turn before and after compaction, and the floor's, after VACUUM FULL. */
async function sizing(db: 'pglite' | 'postgres') {
  const s = await scratch(db);
  const app = await boot(s.url, { RUN_COMPACT_AFTER: '1ms', STORAGE_MAINTENANCE_MS: '86400000' });
  try {
    await app.ds.query('VACUUM FULL');
    const emptyBytes = await totalBytes(app.ds);
    const empty = sum(emptyBytes);
    const streams: string[] = [];
    for (let i = 0; i < SIZING_TURNS; i++) streams.push((await turn(app.port)).text);
    await app.ds.query('VACUUM FULL');
    const beforeBytes = await totalBytes(app.ds);
    const before = (sum(beforeBytes) - empty) / SIZING_TURNS;
    while ((await app.worker.runOnce()).compacted.runs > 0);
    await app.ds.query('VACUUM FULL');
    const afterBytes = await totalBytes(app.ds);
    const after = (sum(afterBytes) - empty) / SIZING_TURNS;
    // the floor: the same events, one row per turn (the stack floor's storing)
    await app.ds.query(`CREATE TABLE floor_events (id bigserial PRIMARY KEY, request_id uuid NOT NULL, events jsonb NOT NULL)`);
    await app.ds.query('VACUUM FULL floor_events');
    const [f0] = (await app.ds.query(`SELECT pg_total_relation_size('floor_events')::bigint AS b`)) as Array<{ b: string }>;
    for (const text of streams) {
      const events = text.split('\n\n').filter((b) => b.includes('data: ')).map((b) => ({ type: /event: (\w+)/.exec(b)?.[1], data: JSON.parse(b.slice(b.indexOf('data: ') + 6)) }));
      await app.ds.query(`INSERT INTO floor_events (request_id, events) VALUES ($1, $2::jsonb)`, [randomUUID(), JSON.stringify(events)]);
    }
    await app.ds.query('VACUUM FULL floor_events');
    const [f1] = (await app.ds.query(`SELECT pg_total_relation_size('floor_events')::bigint AS b`)) as Array<{ b: string }>;
    // each table's growth over the empty database's (its empty pages are not the turns')
    const perTurn = (b: Record<string, number>, t: string) => ((b[t] ?? 0) - (emptyBytes[t] ?? 0)) / SIZING_TURNS;
    const perTable = Object.keys(beforeBytes).filter((t) => perTurn(beforeBytes, t) !== 0 || perTurn(afterBytes, t) !== 0).map((t) => `${t} ${(perTurn(beforeBytes, t) / 1024).toFixed(2)}→${(perTurn(afterBytes, t) / 1024).toFixed(2)}`).join(', ');
    if (process.env.BENCH_STORAGE_KEEP) console.log(`kept: ${s.url}`);
    const traceAfter = perTurn(afterBytes, 'trace_events');
    const afterByTable = Object.fromEntries(Object.keys(afterBytes).map((t) => [t, perTurn(afterBytes, t)]).filter(([, b]) => b !== 0));
    return { before, after, afterWithoutTrace: after - traceAfter, floor: (Number(f1.b) - Number(f0.b)) / SIZING_TURNS, perTable, afterByTable };
  } finally {
    await app.close();
    if (!process.env.BENCH_STORAGE_KEEP) await s.drop();
  }
}

/** The soak with retention and the one without, each in its own process on its own database, started together. */
async function soaks(db: 'pglite' | 'postgres'): Promise<{ on: Soak; off: Soak }> {
  const children = [true, false].map((retention) => {
    const settings: SoakSettings = { db, retention, seconds: SECONDS, rate: RATE, window: WINDOW, compact: COMPACT, partition: PARTITION, vacuum: VACUUM };
    const child = fork(join(__dirname, 'support', 'storage-soak.ts'), [JSON.stringify(settings)], { stdio: 'inherit' });
    let readyResolve!: () => void;
    const ready = new Promise<void>((r) => (readyResolve = r));
    const result = new Promise<Soak>((resolve, reject) => {
      child.on('message', (m: { ready?: boolean; soak?: Soak }) => {
        if (m.ready) readyResolve();
        if (m.soak) resolve(m.soak);
      });
      child.on('exit', (code) => (code === 0 ? undefined : reject(new Error(`the soak ${retention ? 'with' : 'without'} retention exited with ${code}`))));
    });
    return { child, ready, result };
  });
  await Promise.all(children.map((c) => c.ready));
  for (const c of children) c.child.send('go');
  const [on, off] = await Promise.all(children.map((c) => c.result));
  return { on, off };
}

const kb = (b: number) => Math.round(b / 1024);

/** The first sample of each `everyS` seconds. */
function thinned<T extends { t: number }>(samples: T[], everyS: number): T[] {
  const out: T[] = [];
  for (const x of samples) if (out.length === 0 || Math.floor(x.t / everyS) > Math.floor(out[out.length - 1].t / everyS)) out.push(x);
  return out;
}

function svg(series: Array<{ name: string; color: string; samples: Array<{ t: number; bytes: number }> }>, windowS: number): string {
  const W = 720, H = 320, L = 70, B = 40;
  const maxT = Math.max(1, ...series.flatMap((s) => s.samples.map((x) => x.t)));
  const maxB = Math.max(1, ...series.flatMap((s) => s.samples.map((x) => x.bytes)));
  const x = (t: number) => L + ((W - L - 20) * t) / maxT;
  const y = (b: number) => H - B - ((H - B - 20) * b) / maxB;
  const lines = series.map((s, i) => `<polyline fill="none" stroke="${s.color}" stroke-width="2" points="${s.samples.map((p) => `${x(p.t).toFixed(1)},${y(p.bytes).toFixed(1)}`).join(' ')}"/><text x="${L + 10}" y="${20 + i * 16}" fill="${s.color}" font-size="12">${s.name}</text>`);
  const axis = `<line x1="${L}" y1="${H - B}" x2="${W - 20}" y2="${H - B}" stroke="#444"/><line x1="${L}" y1="20" x2="${L}" y2="${H - B}" stroke="#444"/>` +
    `<text x="${W / 2}" y="${H - 8}" font-size="12" text-anchor="middle">seconds (retention window ${windowS} s, dashed)</text>` +
    `<text x="12" y="${H / 2}" font-size="12" transform="rotate(-90 12 ${H / 2})" text-anchor="middle">database MB</text>` +
    `<text x="${L - 6}" y="24" font-size="11" text-anchor="end">${(maxB / 1e6).toFixed(1)}</text><text x="${L - 6}" y="${H - B}" font-size="11" text-anchor="end">0</text>` +
    `<text x="${W - 20}" y="${H - B + 14}" font-size="11" text-anchor="end">${maxT.toFixed(0)}</text>` +
    `<line x1="${x(windowS)}" y1="20" x2="${x(windowS)}" y2="${H - B}" stroke="#999" stroke-dasharray="4 4"/>`;
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif"><rect width="100%" height="100%" fill="#fff"/>${axis}${lines.join('')}</svg>\n`;
}

async function main() {
  const wanted: Array<'pglite' | 'postgres'> = DBS === 'both' ? ['pglite', 'postgres'] : [DBS as 'pglite' | 'postgres'];
  const dbs = wanted.filter((d) => d === 'pglite' || process.env.DATABASE_URL);
  const windowS = (parseDuration(WINDOW) ?? 0) / 1000 + (parseDuration(COMPACT) ?? 0) / 1000;
  // the first window has passed when its rows have gone by either road: the partition drop, or
  // the row deletes two spans later (the worker's grace for the drop)
  const settledFrom = windowS + (2 * (parseDuration(PARTITION) ?? 0)) / 1000;
  const report = new BenchReport(
    REPORT,
    `Storage lifecycle soak (issue 43): two-stage turns (240 text deltas, scripted model, the service in a process per soak) at a steady rate, with compaction (RUN_COMPACT_AFTER), retention (RETENTION_RUNS, _TRACE, _CONVERSATIONS) and PARTITION_INTERVAL scaled to seconds, against the same soak without retention run at the same time in another process on another database; bytes per completed turn before and after compaction (VACUUM FULL) beside the floor, the same events stored as one row per turn. Size over time: [images/${PICTURE}](images/${PICTURE}). Method: bench/README.md.`,
    { seconds: SECONDS, rate: RATE, window: WINDOW, compact: COMPACT, partition: PARTITION, vacuum: VACUUM, sizingTurns: SIZING_TURNS },
  );
  const rows: Array<Array<string | number>> = [];
  const series: Array<{ name: string; color: string; samples: Array<{ t: number; bytes: number }> }> = [];
  const colors = { pglite: ['#1f77b4', '#9ecae1'], postgres: ['#d62728', '#fcae91'] };
  for (const db of dbs) {
    const size = await sizing(db);
    const { on, off } = await soaks(db);
    // from the later of the configured window's end and the first run the worker removed: on a
    // machine that falls behind the rate, turns end later than they start and the first window's
    // runs expire later than the configured time says
    const settledAt = Math.max(settledFrom, on.firstRemovalAt ?? settledFrom);
    const settled = on.samples.filter((s) => s.t > settledAt).map((s) => s.bytes);
    const mean = settled.reduce((a, b) => a + b, 0) / Math.max(1, settled.length);
    const spread = settled.length > 1 ? Math.max(...settled.map((b) => Math.abs(b - mean) / mean)) * 100 : null;
    const added = off.p99Gap > 0 ? ((on.p99Gap - off.p99Gap) / off.p99Gap) * 100 : 0;
    console.log(`\n${db}: ${on.turns} turns with retention (${on.errors} errors, ${on.achievedRate.toFixed(1)}/s, at most ${on.maxInflight} in flight), ${off.turns} without (${off.errors} errors, ${off.achievedRate.toFixed(1)}/s, at most ${off.maxInflight} in flight), at the same time`);
    console.log(`  bytes per completed turn: ${(size.before / 1024).toFixed(1)} KB before compaction, ${(size.after / 1024).toFixed(1)} KB after; floor (one row per turn) ${(size.floor / 1024).toFixed(1)} KB; after compaction without the trace records ${(size.afterWithoutTrace / 1024).toFixed(1)} KB`);
    console.log(`  per table, KB per turn before→after compaction (growth over the empty database): ${size.perTable}`);
    console.log(`  size after the first window (from ${settledAt.toFixed(0)} s; the first run removed at ${on.firstRemovalAt?.toFixed(0) ?? '—'} s): ${(mean / 1e6).toFixed(2)} MB mean, ±${spread?.toFixed(1) ?? '—'} % ; without retention it ends at ${((off.samples.at(-1)?.bytes ?? 0) / 1e6).toFixed(2)} MB`);
    // which tables the size moved in after the first window: each one's least and greatest bytes then
    const settledSamples = on.samples.filter((x) => x.t > settledAt);
    const moved = Object.keys(settledSamples[0]?.tables ?? {})
      .map((t) => ({ t, lo: Math.min(...settledSamples.map((x) => x.tables[t] ?? 0)), hi: Math.max(...settledSamples.map((x) => x.tables[t] ?? 0)), end: settledSamples.at(-1)!.tables[t] ?? 0 }))
      .filter((m) => m.hi - m.lo > 256 * 1024)
      .map((m) => `${m.t} ${(m.lo / 1e6).toFixed(2)}–${(m.hi / 1e6).toFixed(2)} (end ${(m.end / 1e6).toFixed(2)})`);
    console.log(`  after the first window, MB per table (least–greatest): ${moved.join(', ') || 'none moved more than 256 KB'}`);
    console.log(`  chunk gap p99: ${on.p99Gap.toFixed(2)} ms with purges vs ${off.p99Gap.toFixed(2)} ms without (${added.toFixed(1)} %); rows of live or paused runs removed: ${on.heldRemoved}; rows purged: ${on.droppedRows} by dropping partitions, ${on.deletedRows} by row deletes; ${on.partitionsLeft} partitions at the end`);
    report.add(`storage.${db}.kb-turn-before`, `${db}: KB per completed turn before compaction`, size.before / 1024, 'KB/turn', { floor: size.floor / 1024 });
    report.add(`storage.${db}.kb-turn-after`, `${db}: KB per completed turn after compaction`, size.after / 1024, 'KB/turn', { floor: size.floor / 1024 });
    // where a compacted turn's bytes are, table by table (docs/OPERATIONS.md, Sizing)
    for (const [t, b] of Object.entries(size.afterByTable)) report.add(`storage.${db}.kb-turn-after.${t}`, `${db}: KB per completed turn after compaction, ${t}`, (b as number) / 1024, 'KB/turn');
    report.add(`storage.${db}.kb-turn-after-no-trace`, `${db}: KB per completed turn after compaction, trace records aside`, size.afterWithoutTrace / 1024, 'KB/turn', { floor: size.floor / 1024 });
    report.add(`storage.${db}.size-spread`, `${db}: size spread after the first window`, spread, '%');
    report.add(`storage.${db}.settled-from`, `${db}: size spread measured from (s)`, settledAt, 's');
    report.add(`storage.${db}.p99-gap-added`, `${db}: p99 chunk gap added by purges`, added, '%');
    report.add(`storage.${db}.held-removed`, `${db}: rows of live or paused runs removed`, on.heldRemoved, 'rows');
    rows.push([db, on.turns, (size.before / 1024).toFixed(1), (size.after / 1024).toFixed(1), (size.afterWithoutTrace / 1024).toFixed(1), (size.floor / 1024).toFixed(1), (mean / 1e6).toFixed(2), spread === null ? '—' : spread.toFixed(1), ((off.samples.at(-1)?.bytes ?? 0) / 1e6).toFixed(2), on.p99Gap.toFixed(2), off.p99Gap.toFixed(2), on.droppedRows, on.deletedRows, on.heldRemoved]);
    report.add(`storage.${db}.turns`, `${db}: turns of the soak with retention`, on.turns, 'turns');
    report.add(`storage.${db}.rate`, `${db}: turns per second achieved, with retention`, on.achievedRate, 'turns/s');
    // the size over time in the result file, one sample per 10 s, so the spread can be analysed after the run
    for (const [side, soak] of [['retention', on], ['no-retention', off]] as const) {
      const tables = Object.keys(soak.samples[0]?.tables ?? {});
      const rows = thinned(soak.samples, 10).map((x) => [Math.round(x.t), kb(x.bytes), ...tables.map((t) => kb(x.tables[t] ?? 0))]);
      report.addSeries(`${db}.${side}`, `${db}, ${side === 'retention' ? 'compaction + retention' : 'compaction, no retention'}: database KB over time`, ['t s', 'total', ...tables], 'KB', rows);
    }
    series.push({ name: `${db}, compaction + retention`, color: colors[db][0], samples: on.samples }, { name: `${db}, compaction, no retention (at the same time)`, color: colors[db][1], samples: off.samples });
  }
  report.table(REPORT, 'Storage soak', ['database', 'turns', 'KB/turn before', 'KB/turn after', 'KB/turn after, no trace', 'floor KB/turn', 'settled MB', 'spread %', 'MB without retention', 'p99 chunk gap ms', 'p99 without ms', 'rows dropped with partitions', 'rows deleted', 'held rows removed'], rows);
  writeFileSync(join(REPO_ROOT, 'docs', 'images', PICTURE), svg(series, windowS));
  console.log(`\nwrote ${report.write()} and docs/images/${PICTURE}`);
  void SIZED_TABLES;
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
