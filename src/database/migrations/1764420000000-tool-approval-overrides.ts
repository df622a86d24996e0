import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A project's override of which tool calls wait for a person (issue 32, docs/API.md "Approval
 * policy"): names and globs that must wait (`require_patterns`) or need not (`exempt_patterns`),
 * set by an admin. No row: the configuration alone decides.
 */
export class ToolApprovalOverrides1764420000000 implements MigrationInterface {
  name = 'ToolApprovalOverrides1764420000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE tool_approval_overrides (
      project_id varchar(64) PRIMARY KEY,
      require_patterns jsonb NOT NULL DEFAULT '[]',
      exempt_patterns jsonb NOT NULL DEFAULT '[]',
      updated_at timestamptz NOT NULL DEFAULT now(),
      updated_by varchar(200)
    )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP TABLE tool_approval_overrides');
  }
}
