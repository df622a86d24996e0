import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Issue 44, tool-only part: a keyed tool-only execution stores its progress with its key, so a
 * retry on another instance can continue it when its instance died. `progress` holds the model's
 * decision once made, each finished call's execution, and the index of the call running now;
 * `owner` and `heartbeat_at` say which instance runs it and when it last said so (renewed while
 * it runs). An execution is abandoned when its heartbeat is older than RUN_LEASE_MS; keys of chat
 * turns leave these columns alone (their runs have their own lease).
 */
export class KeyedExecutionProgress1764740000000 implements MigrationInterface {
  name = 'KeyedExecutionProgress1764740000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query('ALTER TABLE idempotency_keys ADD COLUMN progress jsonb');
    await q.query('ALTER TABLE idempotency_keys ADD COLUMN owner varchar(128)');
    await q.query('ALTER TABLE idempotency_keys ADD COLUMN heartbeat_at timestamptz');
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('ALTER TABLE idempotency_keys DROP COLUMN heartbeat_at');
    await q.query('ALTER TABLE idempotency_keys DROP COLUMN owner');
    await q.query('ALTER TABLE idempotency_keys DROP COLUMN progress');
  }
}
