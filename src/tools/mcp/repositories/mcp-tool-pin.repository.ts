import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { jsonRows, RawJson, type JsonCell } from '../../../database/json-rows';

export type PinStatus = 'pinned' | 'approved' | 'changed' | 'pending';

/** What is hashed of a tool: what the model reads and what steers how Orion runs it. */
export interface PinnedDefinition {
  title: string | null;
  description: string | null;
  inputSchema: unknown;
  annotations: Record<string, boolean>;
}

/** A row of mcp_tool_pins as the database gives it. */
export interface PinRow {
  server: string;
  tool: string;
  name: string;
  status: PinStatus;
  hash: string | null;
  definition: PinnedDefinition | null;
  pending_hash: string | null;
  pending_definition: PinnedDefinition | null;
  first_seen_at: Date;
  changed_at: Date | null;
  approved_at: Date | null;
  approved_by: string | null;
}

/** A tool seen for the first time, and the status the service gave it. */
export interface NewPin {
  tool: string;
  name: string;
  status: PinStatus;
  hash: string;
  definition: PinnedDefinition;
}

/** A pinned tool whose listed definition differs from the trusted one. */
export interface DriftedPin {
  tool: string;
  status: 'changed' | 'pending';
  hash: string;
  definition: PinnedDefinition;
}

/** Who approved a tool added while MCP_AUTO_APPROVE is on. */
export const AUTO_APPROVER = 'MCP_AUTO_APPROVE';

/**
 * The mcp_tool_pins table (migration 1764200000000). Every write about a server's listing is one
 * statement whatever the number of tools: the tools go in as one jsonb parameter (jsonRows) or a
 * text array, so a server with hundreds of tools costs the same round trips as one with two.
 */
@Injectable()
export class McpToolPinRepository {
  constructor(@InjectDataSource() private readonly ds: DataSource) {}

  /** Every pin of a server. */
  async ofServer(scope: string, server: string): Promise<PinRow[]> {
    return (await this.ds.query('SELECT * FROM mcp_tool_pins WHERE project_id = $1 AND server = $2', [scope, server])) as PinRow[];
  }

  /**
   * Pins tools not pinned yet; a row another instance wrote first is kept (its pin wins). A
   * trusted status stores the definition as the trusted one, `pending` as the one awaiting approval.
   */
  async insertMissing(scope: string, server: string, pins: NewPin[]): Promise<void> {
    if (!pins.length) return;
    const rows: JsonCell[][] = pins.map((p) => [p.tool, p.name, p.status, p.hash, new RawJson(JSON.stringify(p.definition))]);
    await this.ds.query(
      `INSERT INTO mcp_tool_pins (project_id, server, tool, name, status, hash, definition, pending_hash, pending_definition, approved_at, approved_by, changed_at)
       SELECT $1, $2, e->>0, e->>1, e->>2,
              CASE WHEN e->>2 <> 'pending' THEN e->>3 END, CASE WHEN e->>2 <> 'pending' THEN e->4 END,
              CASE WHEN e->>2 = 'pending' THEN e->>3 END, CASE WHEN e->>2 = 'pending' THEN e->4 END,
              CASE WHEN e->>2 = 'approved' THEN now() END, CASE WHEN e->>2 = 'approved' THEN $4 END,
              CASE WHEN e->>2 = 'pending' THEN now() END
         FROM jsonb_array_elements($3::jsonb) AS e
       ON CONFLICT (project_id, server, tool) DO NOTHING`,
      [scope, server, jsonRows(rows), AUTO_APPROVER],
    );
  }

  /** The server went back to the trusted definition of these tools: nothing awaits approval any more. */
  async restoreTrusted(scope: string, server: string, tools: string[]): Promise<void> {
    if (!tools.length) return;
    await this.ds.query(
      `UPDATE mcp_tool_pins SET status = CASE WHEN approved_at IS NULL THEN 'pinned' ELSE 'approved' END, pending_hash = NULL, pending_definition = NULL
       WHERE project_id = $1 AND server = $2 AND tool = ANY($3::text[])`,
      [scope, server, tools],
    );
  }

  /** Records the definitions awaiting approval of tools the server now lists differently. */
  async markDrifted(scope: string, server: string, drifted: DriftedPin[]): Promise<void> {
    if (!drifted.length) return;
    const rows: JsonCell[][] = drifted.map((d) => [d.tool, d.status, d.hash, new RawJson(JSON.stringify(d.definition))]);
    await this.ds.query(
      `UPDATE mcp_tool_pins AS p SET status = e->>1, pending_hash = e->>2, pending_definition = e->3, changed_at = now()
         FROM jsonb_array_elements($3::jsonb) AS e
       WHERE p.project_id = $1 AND p.server = $2 AND p.tool = e->>0`,
      [scope, server, jsonRows(rows)],
    );
  }

  /** Pins awaiting approval (changed or new), or every pin, in a stable order. */
  async list(scope: string, all: boolean): Promise<PinRow[]> {
    return (await this.ds.query(
      `SELECT * FROM mcp_tool_pins WHERE project_id = $1 ${all ? '' : "AND status IN ('changed', 'pending')"} ORDER BY server, name, tool`,
      [scope],
    )) as PinRow[];
  }

  /** Makes the pending definition of `name` the trusted one if its hash is `hash`; the rows changed (none if not). */
  async approve(scope: string, name: string, hash: string, approvedBy: string): Promise<PinRow[]> {
    // a CTE: TypeORM answers a bare UPDATE … RETURNING with [rows, count], a SELECT with rows
    return (await this.ds.query(
      `WITH u AS (UPDATE mcp_tool_pins SET status = 'approved', hash = pending_hash, definition = pending_definition,
         pending_hash = NULL, pending_definition = NULL, approved_at = now(), approved_by = $3
       WHERE project_id = $1 AND name = $2 AND pending_hash = $4 RETURNING *) SELECT * FROM u`,
      [scope, name, approvedBy, hash],
    )) as PinRow[];
  }

  /** The pins registered under a registry name. */
  async byName(scope: string, name: string): Promise<PinRow[]> {
    return (await this.ds.query('SELECT * FROM mcp_tool_pins WHERE project_id = $1 AND name = $2', [scope, name])) as PinRow[];
  }
}
