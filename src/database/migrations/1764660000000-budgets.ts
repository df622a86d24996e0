import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Issue 46: project and key budgets. `budgets`: one row per project or key (its lock serializes
 * the admissions that spend it, across instances). `budget_reservations`: what an admitted turn
 * may spend at most, counted while its run is live; once the run ends its stored usage counts
 * instead (docs/OPERATIONS.md, "Budgets"). `runs.key_id`: the key that sent the turn, for key
 * budgets and the usage report by key.
 */
export class Budgets1764660000000 implements MigrationInterface {
  name = 'Budgets1764660000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE budgets (
      scope varchar(8) NOT NULL CHECK (scope IN ('project', 'key')),
      scope_id varchar(128) NOT NULL,
      period varchar(8) NOT NULL CHECK (period IN ('day', 'month')),
      tokens bigint,
      cost numeric,
      warn_at double precision,
      updated_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (scope, scope_id)
    )`);
    await q.query(`CREATE TABLE budget_reservations (
      request_id uuid PRIMARY KEY,
      project_id varchar(64) NOT NULL,
      key_id varchar(128),
      tokens bigint NOT NULL,
      cost numeric NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now()
    )`);
    await q.query(`CREATE INDEX idx_budget_reservations_project ON budget_reservations (project_id, created_at)`);
    await q.query(`CREATE INDEX idx_budget_reservations_key ON budget_reservations (key_id, created_at) WHERE key_id IS NOT NULL`);
    await q.query(`ALTER TABLE runs ADD COLUMN key_id varchar(128)`);
    await q.query(`CREATE INDEX idx_runs_project_created ON runs (project_id, created_at)`);
    await q.query(`CREATE INDEX idx_runs_key_created ON runs (key_id, created_at) WHERE key_id IS NOT NULL`);
    // budget.reached / budget.warning go through the webhook outbox: a project's event, with no run
    await q.query(`ALTER TABLE webhook_deliveries ALTER COLUMN request_id DROP NOT NULL, ALTER COLUMN conversation_id DROP NOT NULL,
                   ADD COLUMN details jsonb, ADD COLUMN dedupe_key varchar(200)`);
    await q.query(`CREATE UNIQUE INDEX uq_webhook_deliveries_dedupe ON webhook_deliveries (dedupe_key) WHERE dedupe_key IS NOT NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DELETE FROM webhook_deliveries WHERE request_id IS NULL`);
    await q.query(`DROP INDEX uq_webhook_deliveries_dedupe`);
    await q.query(`ALTER TABLE webhook_deliveries DROP COLUMN dedupe_key, DROP COLUMN details, ALTER COLUMN request_id SET NOT NULL, ALTER COLUMN conversation_id SET NOT NULL`);
    await q.query(`DROP INDEX idx_runs_key_created`);
    await q.query(`DROP INDEX idx_runs_project_created`);
    await q.query(`ALTER TABLE runs DROP COLUMN key_id`);
    await q.query(`DROP TABLE budget_reservations`);
    await q.query(`DROP TABLE budgets`);
  }
}
