import { DataSource } from 'typeorm';
import { StorageMaintenanceService } from '../../src/chat/storage-maintenance.service';
import { PARTITION_DAYS_AHEAD, slotName, slotsFrom } from '../../src/database/partitions';
import { TimePartitionsService } from '../../src/database/time-partitions.service';
import { startApp, type TestApp } from '../support/app';
import { onPostgres } from '../support/db';

const SPAN = 10_000;

/**
 * Issue 43, items 2 and 3, through the storage worker (PostgreSQL and PGlite alike: PGlite
 * partitions as PostgreSQL does). With PARTITION_INTERVAL shorter than a day, the partitions
 * ahead have that span; retention drops a past partition whole when every row in it is expired,
 * and one that holds a row of a live or paused run stays, with every row of that run, while the
 * other runs' rows in it go by the row deletes; once the run has ended, the partition goes.
 */
describe(`retention by time partitions (${onPostgres() ? 'PostgreSQL' : 'PGlite'})`, () => {
  let t: TestApp;
  let ds: DataSource;
  let worker: StorageMaintenanceService;

  const partitionsOf = async (table: string): Promise<string[]> =>
    (await ds.query(`SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = $1::regclass ORDER BY 1`, [table])).map(
      (r: { name: string }) => r.name,
    );
  const count = async (sql: string, params: unknown[]) => Number((await ds.query(`SELECT count(*)::int AS n FROM ${sql}`, params))[0].n);
  /** A run that started at `at` in status `status`, with 3 run events and 3 trace records then. */
  const run = async (at: Date, status: string): Promise<string> => {
    const [{ id: conv }] = await ds.query(`INSERT INTO conversations (project_id, updated_at) VALUES ('default', $1) RETURNING id`, [at]);
    const lease = status === 'running' ? `now() + interval '1 hour'` : 'NULL';
    const [{ id }] = await ds.query(
      `INSERT INTO runs (request_id, conversation_id, project_id, protocol, status, created_at, updated_at, lease_owner, lease_expires_at)
       VALUES (gen_random_uuid(), $1, 'default', 'two-stage', $2, $3, $3, ${status === 'running' ? `'elsewhere'` : 'NULL'}, ${lease}) RETURNING request_id AS id`,
      [conv, status, at],
    );
    await ds.query(`INSERT INTO run_events (request_id, seq, type, data, created_at, run_created_at) SELECT $1, s, 'chunk', '{}', $2, $2 FROM generate_series(1, 3) s`, [id, at]);
    await ds.query(`INSERT INTO trace_events (request_id, project_id, type, created_at) SELECT $1, 'default', 'tool_result', $2 FROM generate_series(1, 3) s`, [id, at]);
    return id;
  };
  const rowsOf = async (id: string) => ({
    runs: await count(`runs WHERE request_id = $1`, [id]),
    events: await count(`run_events WHERE request_id = $1`, [id]),
    trace: await count(`trace_events WHERE request_id = $1`, [id]),
  });

  beforeAll(async () => {
    t = await startApp({ PARTITION_INTERVAL: '10s', RETENTION_RUNS: '1m', RETENTION_TRACE: '1m', RUN_COMPACT_AFTER: 'off', STORAGE_MAINTENANCE_MS: '86400000' });
    ds = t.app.get(DataSource);
    worker = t.app.get(StorageMaintenanceService);
  });
  afterAll(() => t.close());

  it('creates the partitions ahead with the configured span (the migration’s day ends with the current span)', async () => {
    for (const table of ['run_events', 'trace_events'] as const) {
      const names = await partitionsOf(table);
      // from the next span on (the current one may still be the migration's day, shortened)
      for (const slot of slotsFrom(new Date(), SPAN, PARTITION_DAYS_AHEAD - 1).slice(1)) expect(names).toContain(slotName(table, slot));
      expect(names).toContain(`${table}_default`);
      expect(names.filter((n) => /_p\d{8}$/.test(n)).length).toBeLessThanOrEqual(1);
    }
  });

  it('drops a whole expired partition, and keeps a live or paused run’s rows with their partition until the run ends', async () => {
    // two past partitions, a day ago (before the day the migration made)
    const [first, second] = slotsFrom(new Date(Date.now() - 86_400_000), SPAN, 1);
    await t.app.get(TimePartitionsService).ensureAhead(first.from);
    const done = await run(new Date(first.from.getTime() + 1000), 'completed');
    const other = await run(new Date(second.from.getTime() + 1000), 'completed');
    const paused = await run(new Date(second.from.getTime() + 2000), 'paused');
    const live = await run(new Date(second.from.getTime() + 3000), 'running');

    const pass = await worker.runOnce();
    expect(pass.complete).toBe(true);
    for (const table of ['run_events', 'trace_events'] as const) {
      // the first partition is gone as a whole; the second stays for the paused and the live run
      expect(await partitionsOf(table)).not.toContain(slotName(table, first));
      expect(await partitionsOf(table)).toContain(slotName(table, second));
    }
    expect(await rowsOf(done)).toEqual({ runs: 0, events: 0, trace: 0 });
    // the other ended run of the kept partition goes by the row deletes
    expect(await rowsOf(other)).toEqual({ runs: 0, events: 0, trace: 0 });
    // not a row of the paused or the live run is lost
    expect(await rowsOf(paused)).toEqual({ runs: 1, events: 3, trace: 3 });
    expect(await rowsOf(live)).toEqual({ runs: 1, events: 3, trace: 3 });
    expect(pass.removed).toMatchObject({ run_events: 6, trace_events: 6, runs: 2 });

    // once they have ended (long ago), their partition is dropped on the next pass
    await ds.query(`UPDATE runs SET status = 'completed', lease_owner = NULL, lease_expires_at = NULL WHERE request_id = ANY($1::uuid[])`, [[paused, live]]);
    const next = await worker.runOnce();
    for (const table of ['run_events', 'trace_events'] as const) expect(await partitionsOf(table)).not.toContain(slotName(table, second));
    expect(await rowsOf(paused)).toEqual({ runs: 0, events: 0, trace: 0 });
    expect(await rowsOf(live)).toEqual({ runs: 0, events: 0, trace: 0 });
    expect(next.removed).toMatchObject({ run_events: 6, trace_events: 6, runs: 2 });
  });
});
