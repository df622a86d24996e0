import type { INestApplicationContext } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { DataSource } from 'typeorm';
import { AppConfigModule } from '../../src/config/config.module';
import { DatabaseModule } from '../../src/database/database.module';
import { dayOf, PARTITION_DAYS_AHEAD } from '../../src/database/partitions';
import { TIME_PARTITIONS, type TimePartitions } from '../../src/database/time-partitions.port';
import { TimePartitionsService } from '../../src/database/time-partitions.service';
import { Client } from 'pg';
import { createTestDatabase, itOnPostgres } from '../support/db';
import { waitFor } from '../support/wait-for';

const DAY = 86_400_000;

/**
 * Issue 43, item 3, on PGlite and PostgreSQL alike: run_events and trace_events are partitioned
 * by day; the days ahead are created at start-up, a day that was missed gets its rows out of the
 * default partition, and dropExpired drops a past day only when no row of it is to be kept.
 */
describe('daily partitions of run_events and trace_events (medium)', () => {
  let ctx: INestApplicationContext;
  let drop: () => Promise<void>;
  let ds: DataSource;
  let partitions: TimePartitions;

  const partitionsOf = async (table: string): Promise<string[]> =>
    (await ds.query(`SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = $1::regclass ORDER BY 1`, [table])).map(
      (r: { name: string }) => r.name,
    );
  const name = (table: string, t: Date) => `${table}_p${dayOf(t).replace(/-/g, '')}`;
  /** a completed run that started at `at`, with `events` run events and as many trace records then */
  const oldRun = async (at: Date, events: number, status = 'completed'): Promise<string> => {
    const [{ id: conv }] = await ds.query(`INSERT INTO conversations (project_id) VALUES ('p') RETURNING id`);
    const [{ id }] = await ds.query(`INSERT INTO runs (request_id, conversation_id, project_id, protocol, status, created_at) VALUES (gen_random_uuid(), $1, 'p', 'two-stage', $2, $3) RETURNING request_id AS id`, [
      conv,
      status,
      at,
    ]);
    await ds.query(`INSERT INTO run_events (request_id, seq, type, data, created_at, run_created_at) SELECT $1, s, 'chunk', '{}', $2, $2 FROM generate_series(1, $3::int) s`, [id, at, events]);
    await ds.query(`INSERT INTO trace_events (request_id, project_id, type, created_at) SELECT $1, 'p', 'tool_result', $2 FROM generate_series(1, $3::int) s`, [id, at, events]);
    return id;
  };

  let url = '';
  beforeAll(async () => {
    const db = await createTestDatabase();
    drop = db.drop;
    url = db.url;
    const moduleRef = await Test.createTestingModule({
      imports: [AppConfigModule.forRoot({ DATABASE_URL: db.url, LLM_PROVIDER: 'replay', LOG_LEVEL: 'error' }), DatabaseModule],
    }).compile();
    ctx = await moduleRef.init();
    ds = ctx.get(DataSource);
    partitions = ctx.get(TIME_PARTITIONS);
  });
  afterAll(async () => {
    await ctx?.close();
    await drop?.();
  });

  it('both tables are partitioned, with today, the days ahead and a default partition', async () => {
    expect(await ds.query(`SELECT relname, relkind FROM pg_class WHERE relname IN ('run_events', 'trace_events') ORDER BY relname`)).toEqual([
      { relname: 'run_events', relkind: 'p' },
      { relname: 'trace_events', relkind: 'p' },
    ]);
    for (const table of ['run_events', 'trace_events']) {
      const names = await partitionsOf(table);
      expect(names).toContain(`${table}_default`);
      for (let i = 0; i <= PARTITION_DAYS_AHEAD; i++) expect(names).toContain(name(table, new Date(Date.now() + i * DAY)));
    }
  });

  it('a missed day gets its partition and its rows from the default partition, none lost', async () => {
    const day = new Date(Date.now() - 20 * DAY);
    const id = await oldRun(day, 5);
    expect(await ds.query(`SELECT count(*)::int AS n FROM run_events_default WHERE request_id = $1`, [id])).toEqual([{ n: 5 }]);
    const created = await ctx.get(TimePartitionsService).ensureAhead(day);
    expect(created).toEqual(expect.arrayContaining([name('run_events', day), name('trace_events', day)]));
    expect(await ds.query(`SELECT tableoid::regclass::text AS p, count(*)::int AS n FROM run_events WHERE request_id = $1 GROUP BY 1`, [id])).toEqual([{ p: name('run_events', day), n: 5 }]);
    expect(await ds.query(`SELECT tableoid::regclass::text AS p, count(*)::int AS n FROM trace_events WHERE request_id = $1 GROUP BY 1`, [id])).toEqual([{ p: name('trace_events', day), n: 5 }]);
    // ids still from one sequence: a row written now comes after them
    const [{ max }] = await ds.query(`SELECT max(id)::bigint AS max FROM run_events WHERE request_id = $1`, [id]);
    const [{ id: next }] = await ds.query(`INSERT INTO run_events (request_id, seq, type, data, run_created_at) VALUES ($1, 6, 'chunk', '{}', $2) RETURNING id`, [id, day]);
    expect(Number(next)).toBeGreaterThan(Number(max));
    // and the same day again creates nothing
    expect(await ctx.get(TimePartitionsService).ensureAhead(day)).toEqual([]);
  });

  it('dropExpired drops a past day only when no row of it is to be kept, and never today', async () => {
    const day = new Date(Date.now() - 30 * DAY);
    await ctx.get(TimePartitionsService).ensureAhead(day);
    const paused = await oldRun(day, 3, 'paused');
    const keep = `EXISTS (SELECT 1 FROM runs r WHERE r.request_id::text = e.request_id::text AND r.status IN ('running', 'paused'))`;
    // the missed day above holds only a completed run's 6 rows: dropped; a paused run's rows: their day stays
    expect(await partitions.dropExpired('run_events', keep, [])).toBe(6);
    expect(await partitionsOf('run_events')).not.toContain(name('run_events', new Date(day.getTime() + 10 * DAY)));
    expect(await partitionsOf('run_events')).toContain(name('run_events', day));
    // the run ends: its day is dropped
    await ds.query(`UPDATE runs SET status = 'completed' WHERE request_id = $1`, [paused]);
    const today = await oldRun(new Date(), 2);
    const removed = await partitions.dropExpired('run_events', keep, []);
    expect(removed).toBe(3);
    expect(await partitionsOf('run_events')).not.toContain(name('run_events', day));
    expect(await ds.query(`SELECT count(*)::int AS n FROM run_events WHERE request_id = $1`, [paused])).toEqual([{ n: 0 }]);
    // today's partition and its rows stay, whatever the predicate
    expect(await ds.query(`SELECT count(*)::int AS n FROM run_events WHERE request_id = $1`, [today])).toEqual([{ n: 2 }]);
    // trace records by the caller's parameters: kept while the project says so
    const traceKeep = `e.project_id = $1`;
    expect(await partitions.dropExpired('trace_events', traceKeep, ['p'])).toBe(0);
    expect(await partitions.dropExpired('trace_events', traceKeep, ['other'])).toBe(3 + 5);
    expect(await partitionsOf('trace_events')).toContain(name('trace_events', new Date()));
    expect(await partitionsOf('trace_events')).toContain(`trace_events_default`);
  });

  itOnPostgres('needs a second connection holding a write', 'a partition ahead is created while a turn holds a write to runs open (it used to time out on a lock on runs)', async () => {
    const turn = new Client({ connectionString: url });
    await turn.connect();
    try {
      const id = await oldRun(new Date(), 1, 'running');
      // a turn's open statement on its run row, as every chunk batch of every running turn has
      await turn.query('BEGIN');
      await turn.query(`UPDATE runs SET updated_at = now() WHERE request_id = $1`, [id]);
      const day = new Date(Date.now() + 40 * DAY);
      const created = await ctx.get(TimePartitionsService).ensureAhead(day);
      expect(created).toEqual(expect.arrayContaining([name('run_events', day), name('trace_events', day)]));
      // and the turn's write commits as it would have without the partition change
      await turn.query(`UPDATE runs SET updated_at = now() WHERE request_id = $1`, [id]);
      await turn.query('COMMIT');
    } finally {
      await turn.query('ROLLBACK').catch(() => undefined);
      await turn.end();
    }
  });

  itOnPostgres('needs a second connection holding a read', 'a partition ahead is created while a read of run_events holds the default partition for a moment (the attach is tried again, not lost for the round)', async () => {
    const reader = new Client({ connectionString: url });
    await reader.connect();
    try {
      const id = await oldRun(new Date(), 1);
      // a read by request id, as the events route's, opens every partition, the default one
      // included, which ATTACH must lock exclusively; held longer than the attach's lock timeout
      await reader.query('BEGIN');
      await reader.query(`SELECT count(*) FROM run_events WHERE request_id = $1`, [id]);
      const waiting = async () => Number((await ds.query(`SELECT count(*)::int AS n FROM pg_locks WHERE NOT granted AND relation = 'run_events_default'::regclass`))[0].n);
      // the read ends once an attach has waited for it and given up (so the round had to try again)
      const released = (async () => {
        await waitFor(async () => (await waiting()) > 0, { intervalMs: 5, what: 'an attach waiting for the default partition' });
        await waitFor(async () => (await waiting()) === 0, { intervalMs: 5, what: 'the attach to give up its wait' });
        await reader.query('COMMIT');
      })();
      const day = new Date(Date.now() + 50 * DAY);
      const created = await ctx.get(TimePartitionsService).ensureAhead(day);
      await released;
      expect(created).toEqual(expect.arrayContaining([name('run_events', day), name('trace_events', day)]));
      expect(await partitionsOf('run_events')).toContain(name('run_events', day));
    } finally {
      await reader.query('ROLLBACK').catch(() => undefined);
      await reader.end();
    }
  });

  it("a deleted run's events go with it, as a conversation's runs' events do, in every partition", async () => {
    const past = await oldRun(new Date(Date.now() - 40 * DAY), 4);
    const now = await oldRun(new Date(), 3);
    const other = await oldRun(new Date(), 2);
    await ds.query(`DELETE FROM runs WHERE request_id = $1`, [past]);
    const [{ conversation_id: conv }] = await ds.query(`SELECT conversation_id FROM runs WHERE request_id = $1`, [now]);
    await ds.query(`DELETE FROM conversations WHERE id = $1`, [conv]);
    expect(await ds.query(`SELECT request_id::text AS id, count(*)::int AS n FROM run_events WHERE request_id = ANY($1::uuid[]) GROUP BY 1`, [[past, now, other]])).toEqual([{ id: other, n: 2 }]);
  });
});
