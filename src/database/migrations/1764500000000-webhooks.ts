import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Webhooks (issue 33): each project's signing secret (and the one it replaced, valid until a
 * time) and default URL; the outbox of events to send, written by the statement that closes a
 * run; and one row per try, which the delivery log reads.
 */
export class Webhooks1764500000000 implements MigrationInterface {
  name = 'Webhooks1764500000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE webhook_settings (
      project_id varchar(128) PRIMARY KEY,
      url text,
      secret text NOT NULL,
      previous_secret text,
      previous_until timestamptz,
      secret_created_at timestamptz NOT NULL DEFAULT now(),
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    )`);
    await q.query(`CREATE TABLE webhook_deliveries (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      request_id uuid NOT NULL REFERENCES runs(request_id) ON DELETE CASCADE,
      project_id varchar(128) NOT NULL,
      conversation_id uuid NOT NULL,
      type varchar(40) NOT NULL,
      status varchar(24) NOT NULL,
      stop_reason varchar(32),
      answer text,
      answer_truncated boolean NOT NULL DEFAULT false,
      usage jsonb,
      url text NOT NULL,
      state varchar(16) NOT NULL DEFAULT 'pending',
      attempts integer NOT NULL DEFAULT 0,
      next_attempt_at timestamptz NOT NULL DEFAULT now(),
      last_error text,
      delivered_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    )`);
    await q.query(`CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE state = 'pending'`);
    await q.query('CREATE INDEX webhook_deliveries_run ON webhook_deliveries (request_id)');
    await q.query(`CREATE TABLE webhook_attempts (
      delivery_id uuid NOT NULL REFERENCES webhook_deliveries(id) ON DELETE CASCADE,
      attempt integer NOT NULL,
      instance varchar(200) NOT NULL,
      started_at timestamptz NOT NULL DEFAULT now(),
      finished_at timestamptz,
      status_code integer,
      error text,
      PRIMARY KEY (delivery_id, attempt)
    )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP TABLE webhook_attempts');
    await q.query('DROP TABLE webhook_deliveries');
    await q.query('DROP TABLE webhook_settings');
  }
}
