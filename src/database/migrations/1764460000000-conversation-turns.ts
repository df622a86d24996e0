import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * One turn at a time per conversation (issue 33): the turns waiting for a conversation's active
 * turn to end. A row lives while its turn is queued: it is deleted when the turn starts (its run
 * row takes over) or is cancelled. Its instance renews `expires_at` while it waits, so the queued
 * turns of an instance that died lapse and stop holding the queue.
 *
 * A run leaving its active statuses on any path (the executor, the sweeper, a cancel of a paused
 * run, any instance) wakes the waiters of its conversation: the trigger NOTIFYs
 * `orion_conversation_turns` with the conversation id when that conversation has queued turns,
 * in the transaction that closes the run, so no code path can forget it.
 */
export class ConversationTurns1764460000000 implements MigrationInterface {
  name = 'ConversationTurns1764460000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE conversation_turns (
      request_id uuid PRIMARY KEY,
      conversation_id uuid NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
      project_id varchar(64) NOT NULL,
      content text NOT NULL,
      strategy varchar(16) NOT NULL CHECK (strategy IN ('enqueue','interrupt','rollback')),
      displaces uuid,
      turn jsonb NOT NULL,
      instance varchar(200) NOT NULL,
      expires_at timestamptz NOT NULL,
      created_at timestamptz NOT NULL DEFAULT clock_timestamp()
    )`);
    await q.query('CREATE INDEX conversation_turns_conversation ON conversation_turns (conversation_id, created_at)');
    await q.query(`CREATE FUNCTION orion_conversation_turn_ended() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF EXISTS (SELECT 1 FROM conversation_turns WHERE conversation_id = NEW.conversation_id) THEN
          PERFORM pg_notify('orion_conversation_turns', NEW.conversation_id::text);
        END IF;
        RETURN NULL;
      END $$`);
    // completed, cancelled and failed are the statuses a run never leaves: reaching one ends a turn
    await q.query(`CREATE TRIGGER runs_conversation_turn_ended AFTER UPDATE OF status ON runs
      FOR EACH ROW WHEN (NEW.status IN ('completed','cancelled','failed') AND OLD.status IS DISTINCT FROM NEW.status)
      EXECUTE FUNCTION orion_conversation_turn_ended()`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP TRIGGER runs_conversation_turn_ended ON runs');
    await q.query('DROP FUNCTION orion_conversation_turn_ended()');
    await q.query('DROP TABLE conversation_turns');
  }
}
