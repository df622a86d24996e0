import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Issue 46: a run's usage (tokens of every model call, `estimated`, the cost from LLM_PRICES),
 * stored by the statement that closes the run, so GET /api/chat/runs/:requestId shows it and a
 * project's usage sums over its runs in SQL. NULL: the run has not ended (or ended before this column).
 */
export class RunUsage1764580000000 implements MigrationInterface {
  name = 'RunUsage1764580000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE runs ADD COLUMN usage jsonb`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE runs DROP COLUMN usage`);
  }
}
