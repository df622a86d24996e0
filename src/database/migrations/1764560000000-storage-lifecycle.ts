import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Issue 43, storage as a lifecycle: a run's compaction mark; each project's own retention
 * (milliseconds; NULL: the deployment's RETENTION_*, -1: kept for ever); the indexes the storage
 * worker's batches find their rows through. Runs after the time partitions (1764540000000), whose
 * run_event_list it replaces; its indexes on trace_events are created on the partitioned table
 * (each partition gets its own).
 */
export class StorageLifecycle1764560000000 implements MigrationInterface {
  name = 'StorageLifecycle1764560000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE runs ADD COLUMN compacted_at timestamptz`);
    // the ended runs still to compact, oldest first (a compacted run leaves the index)
    await q.query(`CREATE INDEX idx_runs_to_compact ON runs (updated_at) WHERE compacted_at IS NULL`);
    await q.query(`CREATE INDEX idx_runs_updated ON runs (updated_at)`);
    await q.query(`CREATE INDEX idx_conversations_updated ON conversations (updated_at)`);
    await q.query(`CREATE INDEX idx_trace_events_created ON trace_events (created_at)`);
    await q.query(`CREATE TABLE project_retention (
      project_id varchar(64) PRIMARY KEY,
      runs_ms bigint CHECK (runs_ms IS NULL OR runs_ms = -1 OR runs_ms > 0),
      trace_ms bigint CHECK (trace_ms IS NULL OR trace_ms = -1 OR trace_ms > 0),
      conversations_ms bigint CHECK (conversations_ms IS NULL OR conversations_ms = -1 OR conversations_ms > 0),
      updated_at timestamptz NOT NULL DEFAULT now())`);
    // a compacted run's events are one row of type 'events' ({s, t, d} per event): the view lists them one by one too
    await q.query(`CREATE OR REPLACE VIEW run_event_list AS
      SELECT e.request_id, e.seq, e.type, e.data, e.created_at FROM run_events e WHERE e.last_seq IS NULL
      UNION ALL
      SELECT e.request_id, e.seq + (x.i - 1)::int AS seq, 'chunk' AS type, x.data, e.created_at
        FROM run_events e, jsonb_array_elements(e.data) WITH ORDINALITY AS x(data, i)
       WHERE e.last_seq IS NOT NULL AND e.type <> 'events'
      UNION ALL
      SELECT e.request_id, (x.data->>'s')::int AS seq, x.data->>'t' AS type, x.data->'d' AS data, e.created_at
        FROM run_events e, jsonb_array_elements(e.data) AS x(data)
       WHERE e.last_seq IS NOT NULL AND e.type = 'events'`);
  }

  async down(q: QueryRunner): Promise<void> {
    // compacted runs back to one row per event (their folded chunks stay folded)
    // run_created_at kept, so the run's rows stay in its partition (migration 1764540000000)
    await q.query(`WITH packed AS (DELETE FROM run_events WHERE type = 'events' RETURNING request_id, data, created_at, run_created_at)
      INSERT INTO run_events (request_id, seq, type, data, created_at, run_created_at)
      SELECT p.request_id, (x.data->>'s')::int, x.data->>'t', x.data->'d', p.created_at, p.run_created_at FROM packed p, jsonb_array_elements(p.data) AS x(data)`);
    await q.query(`CREATE OR REPLACE VIEW run_event_list AS
      SELECT e.request_id, e.seq, e.type, e.data, e.created_at FROM run_events e WHERE e.last_seq IS NULL
      UNION ALL
      SELECT e.request_id, e.seq + (x.i - 1)::int AS seq, 'chunk' AS type, x.data, e.created_at
        FROM run_events e, jsonb_array_elements(e.data) WITH ORDINALITY AS x(data, i)
       WHERE e.last_seq IS NOT NULL`);
    await q.query('DROP TABLE project_retention');
    await q.query('DROP INDEX idx_trace_events_created');
    await q.query('DROP INDEX idx_conversations_updated');
    await q.query('DROP INDEX idx_runs_updated');
    await q.query('DROP INDEX idx_runs_to_compact');
    await q.query('ALTER TABLE runs DROP COLUMN compacted_at');
  }
}
