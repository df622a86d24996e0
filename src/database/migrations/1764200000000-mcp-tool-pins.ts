import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Pinned MCP tool definitions (issue 14, docs/API.md "MCP tool approvals"). `hash` is the trusted
 * definition (pinned on first sight or approved by an admin); `pending_hash` a definition the
 * server now lists that nobody approved yet. `project_id` is `*` while MCP servers are configured
 * for the whole deployment (MCP_CONFIG): one approval then holds for every project.
 */
export class McpToolPins1764200000000 implements MigrationInterface {
  name = 'McpToolPins1764200000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE mcp_tool_pins (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      project_id varchar(64) NOT NULL DEFAULT '*',
      server varchar(32) NOT NULL,
      tool text NOT NULL,
      name varchar(64) NOT NULL,
      status varchar(8) NOT NULL CHECK (status IN ('pinned', 'approved', 'changed', 'pending')),
      hash char(64),
      definition jsonb,
      pending_hash char(64),
      pending_definition jsonb,
      first_seen_at timestamptz NOT NULL DEFAULT now(),
      changed_at timestamptz,
      approved_at timestamptz,
      approved_by varchar(200),
      UNIQUE (project_id, server, tool)
    )`);
    await q.query('CREATE INDEX mcp_tool_pins_name ON mcp_tool_pins (project_id, name)');
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP TABLE mcp_tool_pins');
  }
}
