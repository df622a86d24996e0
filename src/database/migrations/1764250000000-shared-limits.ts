import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Limits that hold across instances (README "Security"): the per-key request rate's fixed
 * windows, and the turn slots counted per key and per project. A slot carries its instance and
 * an expiry that instance renews, so the slots of an instance that died lapse on their own.
 */
export class SharedLimits1764250000000 implements MigrationInterface {
  name = 'SharedLimits1764250000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE rate_limit_windows (
      key varchar(200) PRIMARY KEY,
      hits integer NOT NULL,
      window_ends_at timestamptz NOT NULL
    )`);
    await q.query(`CREATE TABLE turn_slots (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      key_id varchar(64) NOT NULL,
      project_id varchar(128) NOT NULL,
      instance varchar(200) NOT NULL,
      expires_at timestamptz NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now()
    )`);
    await q.query('CREATE INDEX turn_slots_key ON turn_slots (key_id, expires_at)');
    await q.query('CREATE INDEX turn_slots_project ON turn_slots (project_id, expires_at)');
    await q.query('CREATE INDEX turn_slots_instance ON turn_slots (instance)');
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP TABLE turn_slots');
    await q.query('DROP TABLE rate_limit_windows');
  }
}
