import { DataSource } from 'typeorm';
import { StorageMaintenanceService } from '../../src/chat/storage-maintenance.service';
import { startApp, type TestApp } from '../support/app';
import { onPostgres } from '../support/db';

/**
 * Issue 43, a database that stays bounded: after a pass that deleted rows the storage worker
 * VACUUMs the tables it deleted from (STORAGE_VACUUM_EVERY), so the next rows take the space the
 * expired ones left instead of growing the files. PGlite has no autovacuum at all: without it
 * the table below would double; on PostgreSQL autovacuum's minute-long naptime has not come.
 */
describe(`storage worker VACUUM after retention (${onPostgres() ? 'PostgreSQL' : 'PGlite'})`, () => {
  let t: TestApp;
  let ds: DataSource;

  beforeAll(async () => {
    t = await startApp({ RETENTION_RUNS: '1h', RUN_COMPACT_AFTER: 'off', STORAGE_VACUUM_EVERY: '1ms', STORAGE_BATCH_SIZE: '500' });
    ds = t.app.get(DataSource);
  });
  afterAll(async () => {
    await t.close();
  });

  /** `n` ended runs of one conversation, last written two hours ago (past RETENTION_RUNS) */
  const expiredRuns = async (n: number) => {
    const [{ id }] = (await ds.query(`INSERT INTO conversations (project_id) VALUES ('vacuum') RETURNING id`)) as Array<{ id: string }>;
    await ds.query(
      `INSERT INTO runs (request_id, conversation_id, project_id, protocol, status, options, updated_at, created_at)
       SELECT gen_random_uuid(), $1, 'vacuum', 'two-stage', 'completed', jsonb_build_object('pad', repeat(md5(g::text), 8)), now() - interval '2 hours', now() - interval '2 hours'
         FROM generate_series(1, $2::int) g`,
      [id, n],
    );
  };
  const runsBytes = async () => Number(((await ds.query(`SELECT pg_relation_size('runs')::bigint AS b`)) as Array<{ b: string }>)[0].b);
  const runsLeft = async () => Number(((await ds.query(`SELECT count(*)::int AS n FROM runs WHERE project_id = 'vacuum'`)) as Array<{ n: number }>)[0].n);

  it('the rows after a purge reuse the space the purged rows left: the runs table does not grow', async () => {
    const worker = t.app.get(StorageMaintenanceService);
    await expiredRuns(400);
    const filled = await runsBytes();
    expect((await worker.runOnce()).removed.runs).toBe(400);
    expect(await runsLeft()).toBe(0);
    await expiredRuns(400);
    // as many rows again fit in the pages the first ones had (without the VACUUM: about twice the pages)
    expect(await runsBytes()).toBeLessThanOrEqual(filled);
    // and so on, pass after pass
    expect((await worker.runOnce()).removed.runs).toBe(400);
    await expiredRuns(400);
    expect(await runsBytes()).toBeLessThanOrEqual(filled);
  });
});
