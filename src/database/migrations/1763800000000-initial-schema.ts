import type { MigrationInterface, QueryRunner } from 'typeorm';

/** Foundation tables: conversations, chat_messages, runs, run_events, trace_events (issue #2). */
export class InitialSchema1763800000000 implements MigrationInterface {
  name = 'InitialSchema1763800000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE conversations (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      project_id varchar(64) NOT NULL,
      title text NOT NULL DEFAULT '',
      settings jsonb NOT NULL DEFAULT '{}'::jsonb,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now())`);
    await q.query(`CREATE INDEX idx_conversations_project ON conversations (project_id, updated_at DESC)`);

    await q.query(`CREATE TABLE chat_messages (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      conversation_id uuid NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
      role varchar(16) NOT NULL CHECK (role IN ('user','assistant')),
      content text NOT NULL,
      status varchar(16) NOT NULL DEFAULT 'complete' CHECK (status IN ('complete','cancelled','error')),
      request_id uuid,
      metadata jsonb NOT NULL DEFAULT '{}'::jsonb,
      created_at timestamptz NOT NULL DEFAULT clock_timestamp())`);
    await q.query(`CREATE INDEX idx_chat_messages_conversation ON chat_messages (conversation_id, created_at)`);
    // exactly one assistant message per turn
    await q.query(`CREATE UNIQUE INDEX uq_chat_messages_assistant_request ON chat_messages (request_id) WHERE role = 'assistant'`);

    await q.query(`CREATE TABLE runs (
      request_id uuid PRIMARY KEY,
      conversation_id uuid NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
      project_id varchar(64) NOT NULL,
      user_message_id uuid,
      protocol varchar(32) NOT NULL,
      status varchar(16) NOT NULL CHECK (status IN ('running','paused','completed','cancelled','failed')),
      control varchar(16),
      phase_index int NOT NULL DEFAULT 0,
      cycle_index int NOT NULL DEFAULT 0,
      last_seq int NOT NULL DEFAULT 0,
      stop_reason varchar(32),
      options jsonb NOT NULL DEFAULT '{}'::jsonb,
      checkpoint jsonb,
      lease_owner varchar(64),
      lease_expires_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now())`);
    await q.query(`CREATE INDEX idx_runs_status_lease ON runs (status, lease_expires_at)`);

    await q.query(`CREATE TABLE run_events (
      id bigserial PRIMARY KEY,
      request_id uuid NOT NULL REFERENCES runs(request_id) ON DELETE CASCADE,
      seq int NOT NULL,
      type varchar(32) NOT NULL,
      data jsonb NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      CONSTRAINT uq_run_events_seq UNIQUE (request_id, seq))`);

    await q.query(`CREATE TABLE trace_events (
      id bigserial PRIMARY KEY,
      request_id varchar(64),
      project_id varchar(64),
      type varchar(48) NOT NULL,
      details jsonb NOT NULL DEFAULT '{}'::jsonb,
      created_at timestamptz NOT NULL DEFAULT now())`);
    await q.query(`CREATE INDEX idx_trace_events_request ON trace_events (request_id, id)`);
    await q.query(`CREATE INDEX idx_trace_events_project_type ON trace_events (project_id, type, id)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE IF EXISTS trace_events`);
    await q.query(`DROP TABLE IF EXISTS run_events`);
    await q.query(`DROP TABLE IF EXISTS runs`);
    await q.query(`DROP TABLE IF EXISTS chat_messages`);
    await q.query(`DROP TABLE IF EXISTS conversations`);
  }
}
