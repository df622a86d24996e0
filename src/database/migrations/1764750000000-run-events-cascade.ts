import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * run_events loses its foreign key to runs; a statement trigger on runs deletes a deleted run's
 * events instead (issue 43). With the key, every partition created ahead is attached with a
 * copy of it, and adding a foreign key locks the referenced table (runs) in SHARE ROW EXCLUSIVE
 * mode: it waits for every open write to runs — under load there always is one — and every
 * turn's next write to runs queues behind it. So partitions ahead kept failing on their lock
 * timeout, and each try held the turns up for that long. Dropping a detached partition locked
 * runs the same way. The trigger keeps what the key's ON DELETE CASCADE did (a run deleted by
 * retention, a conversation's deletion or the run deletion route takes its events with it) and
 * needs no lock on runs to attach or drop a partition. What the key also refused, an event of a
 * run that does not exist, no writer does: each writes under the run row it has just locked.
 */
export class RunEventsCascade1764750000000 implements MigrationInterface {
  name = 'RunEventsCascade1764750000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query('ALTER TABLE run_events DROP CONSTRAINT IF EXISTS run_events_request_id_fkey');
    await q.query(`CREATE FUNCTION orion_delete_run_events() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        DELETE FROM run_events e USING gone g WHERE e.request_id = g.request_id;
        RETURN NULL;
      END $$`);
    await q.query('CREATE TRIGGER runs_delete_events AFTER DELETE ON runs REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION orion_delete_run_events()');
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP TRIGGER IF EXISTS runs_delete_events ON runs');
    await q.query('DROP FUNCTION IF EXISTS orion_delete_run_events()');
    await q.query('DELETE FROM run_events e WHERE NOT EXISTS (SELECT 1 FROM runs r WHERE r.request_id = e.request_id)');
    await q.query('ALTER TABLE run_events ADD CONSTRAINT run_events_request_id_fkey FOREIGN KEY (request_id) REFERENCES runs(request_id) ON DELETE CASCADE');
  }
}
