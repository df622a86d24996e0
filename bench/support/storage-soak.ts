/**
 * One side of bench:storage's soak (bench/storage.bench.ts): the whole service on its own scratch
 * database in a process of its own, started by the bench with `fork`, so that the soak with
 * retention and the soak without it run at the same time and the machine's noise (a shared,
 * loaded 2-core machine) falls on both alike. The child boots, says `ready`, waits for `go`
 * (both sides start together), runs turns at the rate for the time, and sends its figures back.
 */
import { request } from 'node:http';
import { randomUUID } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { scratchDatabase } from '../load/scratch-db';
import { serviceInProcess } from './service-in-process';

/* eslint-disable @typescript-eslint/no-require-imports */
const { StorageMaintenanceService } = require('../../dist/chat/storage-maintenance.service') as typeof import('../../src/chat/storage-maintenance.service');
const { StorageStats } = require('../../dist/database/storage-stats') as typeof import('../../src/database/storage-stats');
const { TIME_PARTITIONS } = require('../../dist/database/time-partitions.port') as typeof import('../../src/database/time-partitions.port');
const { DataSource: DataSourceToken } = require('typeorm') as typeof import('typeorm');

export interface SoakSettings {
  db: 'pglite' | 'postgres';
  /** true: retention on (RETENTION_RUNS, _TRACE, _CONVERSATIONS = window); false: the reference, retention off */
  retention: boolean;
  seconds: number;
  rate: number;
  window: string;
  compact: string;
  partition: string;
  /** STORAGE_VACUUM_EVERY of both soaks */
  vacuum: string;
}

export interface Soak {
  turns: number;
  errors: number;
  /** the largest number of turns in flight at once (the rate was sustained when it stays small) */
  maxInflight: number;
  achievedRate: number;
  p50Gap: number;
  p99Gap: number;
  /** once a second: seconds since the start, the database's bytes, and each table's */
  samples: Array<{ t: number; bytes: number; tables: Record<string, number> }>;
  heldRemoved: number;
  /** rows removed by the worker: by dropping partitions, by row deletes */
  droppedRows: number;
  deletedRows: number;
  partitionsLeft: number;
  /** seconds from the start to the worker's first pass that removed a run (the first window over; null: none did) */
  firstRemovalAt: number | null;
}

/** One turn; resolves with its SSE text and the gaps between its chunks (ms). */
export function turn(port: number): Promise<{ text: string; gaps: number[] }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/api/chat/messages_two_stage', method: 'POST', headers: { 'content-type': 'application/json' } }, (res) => {
      let text = '';
      const gaps: number[] = [];
      let last = 0;
      res.setEncoding('utf8');
      res.on('data', (c: string) => {
        const now = performance.now();
        if (c.includes('event: chunk')) {
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

export const pct = (xs: number[], p: number) => {
  if (xs.length === 0) return 0;
  const s = Float64Array.from(xs).sort();
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};

export const sum = (b: Record<string, number>) => Object.values(b).reduce((a, x) => a + x, 0);

export async function scratch(db: 'pglite' | 'postgres'): Promise<{ url: string; drop: () => Promise<void> }> {
  if (db === 'pglite') return { url: 'memory://', drop: async () => undefined };
  return scratchDatabase(process.env.DATABASE_URL!);
}

/** A paused and a running run, older than any window: not a row of theirs may go. */
async function plantHeld(ds: DataSource): Promise<() => Promise<number>> {
  const held: string[] = [];
  for (const status of ['paused', 'running']) {
    const c = randomUUID();
    const r = randomUUID();
    held.push(r);
    await ds.query(`INSERT INTO conversations (id, project_id, updated_at) VALUES ($1, 'default', now() - interval '1 day')`, [c]);
    await ds.query(`INSERT INTO runs (request_id, conversation_id, project_id, protocol, status, lease_owner, lease_expires_at, updated_at) VALUES ($1, $2, 'default', 'two-stage', $3, 'bench', now() + interval '1 day', now() - interval '1 day')`, [r, c, status]);
    await ds.query(`INSERT INTO run_events (request_id, seq, type, data, created_at, run_created_at) SELECT $1::uuid, v.seq, v.type, v.data::jsonb, now() - interval '1 day', r.created_at FROM runs r, (VALUES (1, 'start', '{}'), (2, 'chunk', '{"content":"x"}')) AS v(seq, type, data) WHERE r.request_id = $1`, [r]);
    // one trace record in the first partition of the soak, one from the day before (the default partition)
    await ds.query(`INSERT INTO trace_events (request_id, project_id, type, created_at) VALUES ($1, 'default', 'run_started', now() - interval '1 day'), ($1, 'default', 'run_resumed', now())`, [r]);
  }
  return async () => Number(((await ds.query(`SELECT ((SELECT count(*) FROM runs WHERE request_id = ANY($1::uuid[])) + (SELECT count(*) FROM run_events WHERE request_id = ANY($1::uuid[])) + (SELECT count(*) FROM trace_events WHERE request_id = ANY($1::text[])))::int AS n`, [held])) as Array<{ n: number }>)[0].n);
}

export async function runSoak(s: SoakSettings, go: () => Promise<void>): Promise<Soak> {
  const db = await scratch(s.db);
  // MAX_CONCURRENT_TURNS raised: a machine that falls behind the rate makes turns slower (which
  // the gaps show), not refused
  const env: Record<string, string> = { RUN_COMPACT_AFTER: s.compact, STORAGE_MAINTENANCE_MS: '1000', PARTITION_INTERVAL: s.partition, STORAGE_VACUUM_EVERY: s.vacuum, MAX_CONCURRENT_TURNS: '400' };
  if (s.retention) Object.assign(env, { RETENTION_RUNS: s.window, RETENTION_TRACE: s.window, RETENTION_CONVERSATIONS: s.window });
  const { app, port } = await serviceInProcess({ DATABASE_URL: db.url, ...env });
  const ds = app.get(DataSourceToken);
  // what the worker removed, by partition drops and by row deletes (its own trace records of
  // it are purged by the same retention, so they are counted here instead)
  const worker = app.get(StorageMaintenanceService);
  const partitions = app.get<symbol, import('../../src/database/time-partitions.port').TimePartitions>(TIME_PARTITIONS);
  let removed = 0;
  let droppedRows = 0;
  let started: number | null = null;
  let firstRemovalAt: number | null = null;
  const pass = worker.runOnce.bind(worker);
  worker.runOnce = () =>
    pass().then((p) => {
      removed += sum(p.removed);
      if ((p.removed.runs ?? 0) > 0 && firstRemovalAt === null && started !== null) firstRemovalAt = (performance.now() - started) / 1000;
      return p;
    });
  const drop = partitions.dropExpired.bind(partitions);
  partitions.dropExpired = (...a: Parameters<typeof drop>) => drop(...a).then((n) => ((droppedRows += n), n));
  try {
    const heldRows = await plantHeld(ds);
    const heldBefore = await heldRows();
    await go();
    const gaps: number[] = [];
    let turns = 0;
    let errors = 0;
    let maxInflight = 0;
    const samples: Soak['samples'] = [];
    const stats = new StorageStats(ds, 0);
    const t0 = performance.now();
    started = t0;
    const inflight = new Set<Promise<void>>();
    // the last sample is awaited before the service closes (one still reading then would fail the child)
    let sampling: Promise<unknown> = Promise.resolve();
    const sampler = setInterval(() => {
      sampling = stats.sample().then((b) => samples.push({ t: (performance.now() - t0) / 1000, bytes: sum(b.bytes), tables: b.bytes }), () => undefined);
    }, 1000);
    const end = t0 + s.seconds * 1000;
    for (let i = 0; performance.now() < end; i++) {
      const wait = t0 + (i * 1000) / s.rate - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      const p = turn(port)
        .then((r) => {
          turns++;
          for (const g of r.gaps) gaps.push(g);
        })
        .catch(() => void errors++)
        .finally(() => inflight.delete(p));
      inflight.add(p);
      maxInflight = Math.max(maxInflight, inflight.size);
    }
    await Promise.all(inflight);
    const elapsed = (performance.now() - t0) / 1000;
    clearInterval(sampler);
    await sampling;
    const [left] = (await ds.query(`SELECT count(*)::int AS n FROM pg_inherits WHERE inhparent IN (to_regclass('run_events'), to_regclass('trace_events'))`)) as Array<{ n: number }>;
    return {
      turns,
      errors,
      maxInflight,
      achievedRate: turns / elapsed,
      p50Gap: pct(gaps, 50),
      p99Gap: pct(gaps, 99),
      samples,
      heldRemoved: heldBefore - (await heldRows()),
      droppedRows,
      deletedRows: removed - droppedRows,
      partitionsLeft: Number(left.n),
      firstRemovalAt,
    };
  } finally {
    await app.close();
    await db.drop();
  }
}

/** The child's side of the fork: settings in argv[2] (JSON), `ready` → `go` → the figures. */
if (require.main === module) {
  const settings = JSON.parse(process.argv[2]) as SoakSettings;
  const go = () =>
    new Promise<void>((resolve) => {
      process.once('message', () => resolve());
      process.send!({ ready: true });
    });
  runSoak(settings, go).then(
    (soak) => process.send!({ soak }, () => process.exit(0)),
    (err: unknown) => {
      console.error(err);
      process.exit(1);
    },
  );
}
