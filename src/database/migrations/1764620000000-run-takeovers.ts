import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Issue 44: how many times another instance took a run over after its instance's lease lapsed,
 * so a run that keeps killing the instances that continue it is closed once it reached
 * RUN_MAX_TAKEOVERS instead of being passed on forever.
 */
export class RunTakeovers1764620000000 implements MigrationInterface {
  name = 'RunTakeovers1764620000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE runs ADD COLUMN takeovers int NOT NULL DEFAULT 0`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE runs DROP COLUMN takeovers`);
  }
}
