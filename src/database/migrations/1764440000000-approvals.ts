import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Approvals (issue 32): a tool call that waits for a person is stored, so that a decision given
 * on any instance (or after the instance that asked died) finds it; a run waiting for one has
 * the status `awaiting_approval`. Deleting a run deletes its approvals.
 */
export class Approvals1764440000000 implements MigrationInterface {
  name = 'Approvals1764440000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE runs DROP CONSTRAINT IF EXISTS runs_status_check`);
    // 'awaiting_approval' is longer than the 16 characters the column had
    await q.query(`ALTER TABLE runs ALTER COLUMN status TYPE varchar(24)`);
    await q.query(`ALTER TABLE runs ADD CONSTRAINT runs_status_check CHECK (status IN ('running','awaiting_approval','paused','completed','cancelled','failed'))`);
    await q.query(`
      CREATE TABLE approvals (
        id uuid PRIMARY KEY,
        request_id uuid NOT NULL REFERENCES runs(request_id) ON DELETE CASCADE,
        project_id varchar(64) NOT NULL,
        tool varchar(200) NOT NULL,
        call_id varchar(200) NOT NULL,
        arguments jsonb,
        reason varchar(64) NOT NULL,
        status varchar(16) NOT NULL DEFAULT 'pending' CHECK (status IN ('pending','approved','denied','expired','void')),
        decision_reason text,
        edited_arguments jsonb,
        edited boolean NOT NULL DEFAULT false,
        decided_by varchar(64),
        created_at timestamptz NOT NULL DEFAULT now(),
        expires_at timestamptz NOT NULL,
        decided_at timestamptz
      )`);
    await q.query(`CREATE INDEX idx_approvals_request ON approvals (request_id, created_at)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE IF EXISTS approvals`);
    await q.query(`ALTER TABLE runs DROP CONSTRAINT IF EXISTS runs_status_check`);
    await q.query(`ALTER TABLE runs ADD CONSTRAINT runs_status_check CHECK (status IN ('running','paused','completed','cancelled','failed'))`);
  }
}
