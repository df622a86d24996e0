import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * runs.released_by: the instance that let a run go on shutdown (issue 44, rolling deploys).
 * Releasing a lease clears lease_owner, which fences the releasing instance's writes; without
 * this column the taker could not tell a hand-over from a death: it named no instance in its
 * run_taken_over record, and counted the hand-over against RUN_MAX_TAKEOVERS, so a run handed
 * A -> B -> A by a rolling restart was closed `takeovers_exhausted` by the next kill.
 */
export class RunReleasedBy1764770000000 implements MigrationInterface {
  name = 'RunReleasedBy1764770000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query('ALTER TABLE runs ADD COLUMN released_by varchar(64)');
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('ALTER TABLE runs DROP COLUMN released_by');
  }
}
