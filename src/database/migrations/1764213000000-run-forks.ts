import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A run forked from an earlier checkpoint of another run (issue 13, item 9) names its parent and
 * the checkpoint it continues from. Deleting the parent (with its conversation) unlinks a fork
 * rather than failing: both go in the same transaction anyway.
 */
export class RunForks1764213000000 implements MigrationInterface {
  name = 'RunForks1764213000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE runs ADD COLUMN parent_request_id uuid REFERENCES runs(request_id) ON DELETE SET NULL`);
    await q.query(`ALTER TABLE runs ADD COLUMN forked_from_phase_index int`);
    await q.query(`CREATE INDEX idx_runs_parent ON runs (parent_request_id) WHERE parent_request_id IS NOT NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX IF EXISTS idx_runs_parent`);
    await q.query(`ALTER TABLE runs DROP COLUMN forked_from_phase_index`);
    await q.query(`ALTER TABLE runs DROP COLUMN parent_request_id`);
  }
}
