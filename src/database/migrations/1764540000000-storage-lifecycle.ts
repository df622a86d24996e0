import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Issue 43, storage as a lifecycle: a run's compaction mark; each project's own retention
 * (milliseconds; NULL: the deployment's RETENTION_*, -1: kept for ever); the indexes the storage
 * worker's batches find their rows through.
 */
export class StorageLifecycle1764540000000 implements MigrationInterface {
  name = 'StorageLifecycle1764540000000';

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
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP TABLE project_retention');
    await q.query('DROP INDEX idx_trace_events_created');
    await q.query('DROP INDEX idx_conversations_updated');
    await q.query('DROP INDEX idx_runs_updated');
    await q.query('DROP INDEX idx_runs_to_compact');
    await q.query('ALTER TABLE runs DROP COLUMN compacted_at');
  }
}
