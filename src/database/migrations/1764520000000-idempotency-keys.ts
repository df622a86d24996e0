import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Idempotent sends (issue 42): one row per `Idempotency-Key` of a project, naming the request
 * (a chat turn's run, or a tool-only execution) that the first send with that key started, and
 * the fingerprint of its route and body. The primary key is the race: of two sends with one key
 * at once, on any instances, exactly one insert wins and starts the turn; the other reads the row
 * and follows that request. `result` holds a finished tool-only execution's answer (chat turns
 * are read back from their run). A row past `expires_at` is replaced by the next send with its
 * key, and the sweeper deletes the others.
 */
export class IdempotencyKeys1764520000000 implements MigrationInterface {
  name = 'IdempotencyKeys1764520000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE idempotency_keys (
      project_id varchar(64) NOT NULL,
      key varchar(255) NOT NULL,
      fingerprint char(64) NOT NULL,
      request_id uuid NOT NULL,
      result jsonb,
      created_at timestamptz NOT NULL DEFAULT now(),
      expires_at timestamptz NOT NULL,
      PRIMARY KEY (project_id, key)
    )`);
    await q.query('CREATE INDEX idempotency_keys_expiry ON idempotency_keys (expires_at)');
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP TABLE idempotency_keys');
  }
}
