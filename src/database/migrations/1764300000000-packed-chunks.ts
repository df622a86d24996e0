import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Consecutive chunk events of one write are stored as one row (issue 17): `seq` is the first
 * event's, `last_seq` the last one's, `type` is 'chunks' and `data` the array of their data, in
 * seq order. A row with `last_seq` NULL holds one event, as every row did before. The view
 * `run_event_list` gives one row per event whatever the layout (for operators and tests; the
 * service expands rows itself).
 *
 * Versions before this one read such rows wrongly: stop every instance of an older version
 * before the first instance of this one starts (README, "Upgrading").
 */
export class PackedChunks1764300000000 implements MigrationInterface {
  name = 'PackedChunks1764300000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query('ALTER TABLE run_events ADD COLUMN last_seq int');
    await q.query(`CREATE VIEW run_event_list AS
      SELECT e.request_id, e.seq, e.type, e.data, e.created_at FROM run_events e WHERE e.last_seq IS NULL
      UNION ALL
      SELECT e.request_id, e.seq + (x.i - 1)::int AS seq, 'chunk' AS type, x.data, e.created_at
        FROM run_events e, jsonb_array_elements(e.data) WITH ORDINALITY AS x(data, i)
       WHERE e.last_seq IS NOT NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP VIEW run_event_list');
    // back to one row per event, which is all the previous version reads
    await q.query(`WITH packed AS (DELETE FROM run_events WHERE last_seq IS NOT NULL RETURNING request_id, seq, data, created_at)
      INSERT INTO run_events (request_id, seq, type, data, created_at)
      SELECT p.request_id, p.seq + (x.i - 1)::int, 'chunk', x.data, p.created_at
        FROM packed p, jsonb_array_elements(p.data) WITH ORDINALITY AS x(data, i)`);
    await q.query('ALTER TABLE run_events DROP COLUMN last_seq');
  }
}
