/**
 * npm run bench:storage (needs `nest build`; PostgreSQL rows need DATABASE_URL)
 *
 * A soak of the storage lifecycle (issue 43): two-stage turns at a steady rate for a set time
 * through the whole service in one process (the scripted model: 240 text deltas, no delays),
 * with compaction and retention scaled down to seconds; database bytes per table sampled once a
 * second; the same soak without compaction or retention, for the added latency per chunk during
 * purges; a sizing phase for the bytes per completed turn before and after compaction (after
 * VACUUM FULL), beside its floor: the same events stored as one row per turn (the stack floor's
 * storing, bench/load/stack-floor.ts) in the same database. Writes docs/images/storage-soak.svg.
 *
 *   npm run bench:storage                                        # short: 30 s at 5 turns/s, retention 8 s
 *   npm run bench:storage -- --seconds 1200 --rate 20 --window 3m   # the issue's long soak (24,000 turns)
 */
import { request } from 'node:http';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { BenchReport, REPO_ROOT } from './report';
import { scratchDatabase } from './load/scratch-db';
import { serviceInProcess } from './support/service-in-process';

/* eslint-disable @typescript-eslint/no-require-imports */
const { StorageMaintenanceService } = require('../dist/chat/storage-maintenance.service') as typeof import('../src/chat/storage-maintenance.service');
const { StorageStats, SIZED_TABLES } = require('../dist/database/storage-stats') as typeof import('../src/database/storage-stats');
const { parseDuration } = require('../dist/config/duration') as typeof import('../src/config/duration');
const { DataSource: DataSourceToken } = require('typeorm') as typeof import('typeorm');

const arg = (name: string, dflt: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : dflt;
};
const SECONDS = Number(arg('seconds', '30'));
const RATE = Number(arg('rate', '5'));
const WINDOW = arg('window', '8s');
const COMPACT = arg('compact', '2s');
const SIZING_TURNS = Number(arg('sizing-turns', '100'));
const DBS = arg('db', 'both');
/** the result file's name (bench/results/<report>.json): a long soak beside the short one */
const REPORT = arg('report', 'storage');

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

/** One turn; resolves with its SSE text and the gaps between its chunks (ms). */
function turn(port: number): Promise<{ text: string; gaps: number[] }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/api/chat/messages_two_stage', method: 'POST', headers: { 'content-type': 'application/json' } }, (res) => {
      let text = '';
      const gaps: number[] = [];
      let last = 0;
      res.setEncoding('utf8');
      res.on('data', (c: string) => {
        const now = performance.now();
        const n = c.split('event: chunk').length - 1;
        if (n > 0) {
          if (last) gaps.push(now - last);
          last = now;
        }
        text += c;
      });
      res.on('end', () => (res.statusCode === 200 && text.includes('event: done') ? resolve({ text, gaps }) : reject(new Error(`HTTP ${res.statusCode}`))));
    });
    req.on('error', reject);
    req.end('{"content":"Summarize docs/roadmap.md"}');
  });
}

const pct = (xs: number[], p: number) => {
  if (xs.length === 0) return 0;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};

async function totalBytes(ds: DataSource): Promise<Record<string, number>> {
  return (await new StorageStats(ds, 0).sample()).bytes;
}
const sum = (b: Record<string, number>) => Object.values(b).reduce((a, x) => a + x, 0);

async function scratch(db: 'pglite' | 'postgres'): Promise<{ url: string; drop: () => Promise<void> }> {
  if (db === 'pglite') return { url: 'memory://', drop: async () => undefined };
  return scratchDatabase(process.env.DATABASE_URL!);
}

/** Bytes per completed turn before and after compaction, and the floor's, after VACUUM FULL. */
async function sizing(db: 'pglite' | 'postgres') {
  const s = await scratch(db);
  const app = await boot(s.url, { RUN_COMPACT_AFTER: '1ms', STORAGE_MAINTENANCE_MS: '86400000' });
  try {
    await app.ds.query('VACUUM FULL');
    const empty = sum(await totalBytes(app.ds));
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
    const perTable = Object.keys(beforeBytes).map((t) => `${t} ${(beforeBytes[t] / 1024 / SIZING_TURNS).toFixed(1)}→${(afterBytes[t] / 1024 / SIZING_TURNS).toFixed(1)}`).join(', ');
    if (process.env.BENCH_STORAGE_KEEP) console.log(`kept: ${s.url}`);
    const traceAfter = (afterBytes.trace_events ?? 0) / SIZING_TURNS;
    return { before, after, afterWithoutTrace: after - traceAfter, floor: (Number(f1.b) - Number(f0.b)) / SIZING_TURNS, perTable };
  } finally {
    await app.close();
    if (!process.env.BENCH_STORAGE_KEEP) await s.drop();
  }
}

interface Soak {
  turns: number;
  errors: number;
  p50Gap: number;
  p99Gap: number;
  samples: Array<{ t: number; bytes: number }>;
  heldRemoved: number;
  purged: number;
}

/** Turns at RATE per second for SECONDS, sampling bytes each second; `lifecycle` false: no compaction nor retention. */
async function soak(db: 'pglite' | 'postgres', lifecycle: boolean): Promise<Soak> {
  const s = await scratch(db);
  const env: Record<string, string> = lifecycle
    ? { RUN_COMPACT_AFTER: COMPACT, RETENTION_RUNS: WINDOW, RETENTION_TRACE: WINDOW, RETENTION_CONVERSATIONS: WINDOW, STORAGE_MAINTENANCE_MS: '1000' }
    : { RUN_COMPACT_AFTER: 'off', STORAGE_MAINTENANCE_MS: '86400000' };
  const app = await boot(s.url, env);
  let purged = 0;
  try {
    // a paused and a running run, older than any window: not a row of theirs may go
    const held: string[] = [];
    for (const status of ['paused', 'running']) {
      const c = randomUUID();
      const r = randomUUID();
      held.push(r);
      await app.ds.query(`INSERT INTO conversations (id, project_id, updated_at) VALUES ($1, 'default', now() - interval '1 day')`, [c]);
      await app.ds.query(`INSERT INTO runs (request_id, conversation_id, project_id, protocol, status, lease_owner, lease_expires_at, updated_at) VALUES ($1, $2, 'default', 'two-stage', $3, 'bench', now() + interval '1 day', now() - interval '1 day')`, [r, c, status]);
      await app.ds.query(`INSERT INTO run_events (request_id, seq, type, data, created_at, run_created_at) SELECT $1::uuid, v.seq, v.type, v.data::jsonb, now() - interval '1 day', r.created_at FROM runs r, (VALUES (1, 'start', '{}'), (2, 'chunk', '{"content":"x"}')) AS v(seq, type, data) WHERE r.request_id = $1`, [r]);
      await app.ds.query(`INSERT INTO trace_events (request_id, project_id, type, created_at) VALUES ($1, 'default', 'run_started', now() - interval '1 day')`, [r]);
    }
    const heldRows = async () => Number(((await app.ds.query(`SELECT ((SELECT count(*) FROM runs WHERE request_id = ANY($1::uuid[])) + (SELECT count(*) FROM run_events WHERE request_id = ANY($1::uuid[])) + (SELECT count(*) FROM trace_events WHERE request_id = ANY($1::text[])))::int AS n`, [held])) as Array<{ n: number }>)[0].n);
    const heldBefore = await heldRows();
    const gaps: number[] = [];
    let turns = 0;
    let errors = 0;
    const samples: Array<{ t: number; bytes: number }> = [];
    const t0 = performance.now();
    const inflight = new Set<Promise<void>>();
    const sampler = setInterval(() => void totalBytes(app.ds).then((b) => samples.push({ t: (performance.now() - t0) / 1000, bytes: sum(b) })), 1000);
    const end = t0 + SECONDS * 1000;
    for (let i = 0; performance.now() < end; i++) {
      const due = t0 + (i * 1000) / RATE;
      const wait = due - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      const p = turn(app.port)
        .then((r) => {
          turns++;
          gaps.push(...r.gaps);
        })
        .catch(() => void errors++)
        .finally(() => inflight.delete(p));
      inflight.add(p);
    }
    await Promise.all(inflight);
    clearInterval(sampler);
    if (lifecycle) {
      const traced = (await app.ds.query(`SELECT details FROM trace_events WHERE type = 'storage_purged'`)) as Array<{ details: { removed: Record<string, number> } }>;
      purged = traced.reduce((a, r) => a + Object.values(r.details.removed).reduce((x, y) => x + y, 0), 0);
    }
    return { turns, errors, p50Gap: pct(gaps, 50), p99Gap: pct(gaps, 99), samples, heldRemoved: heldBefore - (await heldRows()), purged };
  } finally {
    await app.close();
    await s.drop();
  }
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
  const report = new BenchReport(
    REPORT,
    `Storage lifecycle soak (issue 43): two-stage turns (240 text deltas, scripted model, one process) at a steady rate, with compaction (RUN_COMPACT_AFTER) and retention (RETENTION_RUNS, _TRACE, _CONVERSATIONS) scaled to seconds, against the same soak without them; bytes per completed turn before and after compaction (VACUUM FULL) beside the floor, the same events stored as one row per turn. Size over time: [images/storage-soak.svg](images/storage-soak.svg). Method: bench/README.md.`,
    { seconds: SECONDS, rate: RATE, window: WINDOW, compact: COMPACT, sizingTurns: SIZING_TURNS },
  );
  const rows: Array<Array<string | number>> = [];
  const series: Array<{ name: string; color: string; samples: Array<{ t: number; bytes: number }> }> = [];
  const colors = { pglite: ['#1f77b4', '#9ecae1'], postgres: ['#d62728', '#fcae91'] };
  for (const db of dbs) {
    const size = await sizing(db);
    const on = await soak(db, true);
    const off = await soak(db, false);
    const settled = on.samples.filter((s) => s.t > windowS + 2).map((s) => s.bytes);
    const mean = settled.reduce((a, b) => a + b, 0) / Math.max(1, settled.length);
    const spread = settled.length > 1 ? Math.max(...settled.map((b) => Math.abs(b - mean) / mean)) * 100 : null;
    const added = off.p99Gap > 0 ? ((on.p99Gap - off.p99Gap) / off.p99Gap) * 100 : 0;
    console.log(`\n${db}: ${on.turns} turns with the lifecycle (${on.errors} errors), ${off.turns} without (${off.errors} errors)`);
    console.log(`  bytes per completed turn: ${(size.before / 1024).toFixed(1)} KB before compaction, ${(size.after / 1024).toFixed(1)} KB after; floor (one row per turn) ${(size.floor / 1024).toFixed(1)} KB; after compaction without the trace records ${(size.afterWithoutTrace / 1024).toFixed(1)} KB`);
    console.log(`  per table, KB per turn before→after compaction (empty tables' pages included): ${size.perTable}`);
    console.log(`  size after the first window: ${(mean / 1e6).toFixed(2)} MB mean, ±${spread?.toFixed(1) ?? '—'} % ; without retention it ends at ${((off.samples.at(-1)?.bytes ?? 0) / 1e6).toFixed(2)} MB`);
    console.log(`  chunk gap p99: ${on.p99Gap.toFixed(2)} ms with purges vs ${off.p99Gap.toFixed(2)} ms without (${added.toFixed(1)} %); rows of live or paused runs removed: ${on.heldRemoved}; rows purged: ${on.purged}`);
    report.add(`storage.${db}.kb-turn-before`, `${db}: KB per completed turn before compaction`, size.before / 1024, 'KB/turn', { floor: size.floor / 1024 });
    report.add(`storage.${db}.kb-turn-after`, `${db}: KB per completed turn after compaction`, size.after / 1024, 'KB/turn', { floor: size.floor / 1024 });
    report.add(`storage.${db}.kb-turn-after-no-trace`, `${db}: KB per completed turn after compaction, trace records aside`, size.afterWithoutTrace / 1024, 'KB/turn', { floor: size.floor / 1024 });
    report.add(`storage.${db}.size-spread`, `${db}: size spread after the first window`, spread, '%');
    report.add(`storage.${db}.p99-gap-added`, `${db}: p99 chunk gap added by purges`, added, '%');
    report.add(`storage.${db}.held-removed`, `${db}: rows of live or paused runs removed`, on.heldRemoved, 'rows');
    rows.push([db, on.turns, (size.before / 1024).toFixed(1), (size.after / 1024).toFixed(1), (size.afterWithoutTrace / 1024).toFixed(1), (size.floor / 1024).toFixed(1), (mean / 1e6).toFixed(2), spread === null ? '—' : spread.toFixed(1), ((off.samples.at(-1)?.bytes ?? 0) / 1e6).toFixed(2), on.p99Gap.toFixed(2), off.p99Gap.toFixed(2), on.purged, on.heldRemoved]);
    series.push({ name: `${db}, compaction + retention`, color: colors[db][0], samples: on.samples }, { name: `${db}, neither`, color: colors[db][1], samples: off.samples });
  }
  report.table(REPORT, 'Storage soak', ['database', 'turns', 'KB/turn before', 'KB/turn after', 'KB/turn after, no trace', 'floor KB/turn', 'settled MB', 'spread %', 'MB without retention', 'p99 chunk gap ms', 'p99 without ms', 'rows purged', 'held rows removed'], rows);
  const picture = REPORT === 'storage' ? 'storage-soak.svg' : `${REPORT}.svg`;
  writeFileSync(join(REPO_ROOT, 'docs', 'images', picture), svg(series, windowS));
  console.log(`\nwrote ${report.write()} and docs/images/${picture}`);
  void SIZED_TABLES;
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
