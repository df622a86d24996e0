import { Injectable, Optional, type OnModuleInit } from '@nestjs/common';
import { createHash } from 'node:crypto';
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { canonicalJson } from '../../common/util/canonical-json.util';
import { AppConfigService } from '../../config/app-config.service';
import { DbNotifierService } from '../../database/db-notifier.service';
import { McpToolPinRepository, type DriftedPin, type NewPin, type PinnedDefinition, type PinRow, type PinStatus } from './repositories/mcp-tool-pin.repository';

export type { PinnedDefinition, PinStatus } from './repositories/mcp-tool-pin.repository';

/** NOTIFY channel of approvals, so every instance re-checks that server's tools (payload: server name). */
const APPROVALS = 'mcp_tool_approved';

/** Why a pinned tool is held: its definition differs from the trusted one, or it was never approved. */
export const PIN_CHANGED = 'definition changed';
export const PIN_PENDING = 'awaiting approval';

export interface SeenTool {
  /** the tool's name on its server */
  tool: string;
  /** registry name `<server>__<tool>` */
  name: string;
  definition: PinnedDefinition;
  hash: string;
}

export interface ToolPin {
  name: string;
  server: string;
  tool: string;
  status: PinStatus;
  hash: string | null;
  definition: PinnedDefinition | null;
  pendingHash: string | null;
  pendingDefinition: PinnedDefinition | null;
  firstSeenAt: string;
  changedAt: string | null;
  approvedAt: string | null;
  approvedBy: string | null;
}

/** MCP servers come from MCP_CONFIG, one set for the whole deployment: their pins hold for every project. */
const SCOPE = '*';
const HINTS = ['readOnlyHint', 'destructiveHint', 'idempotentHint', 'openWorldHint'] as const;

/** The part of an MCP tool that is pinned. */
export function pinnedDefinition(tool: Tool): PinnedDefinition {
  const annotations: Record<string, boolean> = {};
  for (const h of HINTS) if (typeof tool.annotations?.[h] === 'boolean') annotations[h] = tool.annotations[h] as boolean;
  return { title: tool.title ?? null, description: tool.description ?? null, inputSchema: tool.inputSchema ?? null, annotations };
}

/** sha256 of the canonical JSON (RFC 8785): the order of keys never makes a definition "change". */
export function pinHash(def: PinnedDefinition): string {
  return createHash('sha256').update(canonicalJson(def)).digest('hex');
}

export class PinConflict extends Error {}

/**
 * Trust on first use for MCP tool definitions (issue 14). The first listing of a server pins every
 * tool it offers; afterwards a changed definition, and a tool the server adds (unless
 * MCP_AUTO_APPROVE), is held until an admin approves the exact definition by its hash. The pins
 * live in the shared database (McpToolPinRepository), so every instance and every restart sees them.
 */
@Injectable()
export class McpToolPinsService implements OnModuleInit {
  private readonly autoApprove: boolean;
  private readonly listeners = new Set<(server: string) => Promise<void> | void>();

  constructor(
    private readonly pins: McpToolPinRepository,
    config: AppConfigService,
    @Optional() private readonly notifier?: DbNotifierService,
  ) {
    this.autoApprove = config.get('MCP_AUTO_APPROVE') === true;
  }

  async onModuleInit(): Promise<void> {
    await this.notifier?.listen(APPROVALS, (server) => void this.approved(server));
  }

  /** Called after an approval, to re-check that server's live tools. */
  onApproved(listener: (server: string) => Promise<void> | void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * Records a server's current listing and answers, per registry name, why a tool is held
   * (absent = it may run). Tools the server no longer lists keep their pins: one that comes back
   * changed is caught.
   */
  async reconcile(server: string, seen: SeenTool[]): Promise<Map<string, string>> {
    let rows = await this.pins.ofServer(SCOPE, server);
    const firstSight = rows.length === 0;
    const byTool = new Map(rows.map((r) => [r.tool, r]));
    const status: PinStatus = firstSight ? 'pinned' : this.autoApprove ? 'approved' : 'pending';
    const missing: NewPin[] = seen.filter((s) => !byTool.has(s.tool)).map((s) => ({ tool: s.tool, name: s.name, status, hash: s.hash, definition: s.definition }));
    await this.pins.insertMissing(SCOPE, server, missing);
    // another instance may have written some of them first: its rows win
    if (missing.length) rows = await this.pins.ofServer(SCOPE, server);
    const current = new Map(rows.map((r) => [r.tool, r]));
    const held = new Map<string, string>();
    const restored: string[] = [];
    const drifted: DriftedPin[] = [];
    for (const s of seen) {
      const row = current.get(s.tool);
      if (!row) {
        held.set(s.name, PIN_PENDING);
        continue;
      }
      if (row.hash === s.hash) {
        // the server went back to the trusted definition
        if (row.status === 'changed' || row.pending_hash) restored.push(s.tool);
        continue;
      }
      const status = row.hash === null ? 'pending' : 'changed';
      if (row.pending_hash !== s.hash || row.status !== status) drifted.push({ tool: s.tool, status, hash: s.hash, definition: s.definition });
      held.set(s.name, status === 'pending' ? PIN_PENDING : PIN_CHANGED);
    }
    await this.pins.restoreTrusted(SCOPE, server, restored);
    await this.pins.markDrifted(SCOPE, server, drifted);
    return held;
  }

  /** Pins awaiting approval (changed or new), or every pin. */
  async list(all = false): Promise<ToolPin[]> {
    return (await this.pins.list(SCOPE, all)).map(toPin);
  }

  /**
   * Makes the pending definition of `name` the trusted one, if its hash is `hash` (what the admin
   * reviewed); then re-checks the live tools. Undefined when no such tool is pinned; PinConflict
   * when nothing awaits approval or the server changed the definition again since.
   */
  async approve(name: string, hash: string, approvedBy: string): Promise<ToolPin | undefined> {
    const rows = await this.pins.approve(SCOPE, name, hash, approvedBy.slice(0, 200));
    if (!rows.length) {
      const existing = await this.pins.byName(SCOPE, name);
      if (!existing.length) return undefined;
      const pending = existing.find((r) => r.pending_hash);
      throw new PinConflict(
        pending
          ? `the definition of ${name} awaiting approval has hash ${pending.pending_hash}, not ${hash}: review it again`
          : `${name} has no definition awaiting approval`,
      );
    }
    // this instance first, so the answer means "offered again"; then the others
    await this.approved(rows[0].server);
    await this.notifier?.notify(APPROVALS, rows[0].server);
    return toPin(rows[0]);
  }

  private async approved(server: string): Promise<void> {
    for (const l of this.listeners) await l(server);
  }
}

function toPin(r: PinRow): ToolPin {
  const iso = (d: Date | null) => (d ? new Date(d).toISOString() : null);
  return {
    name: r.name, server: r.server, tool: r.tool, status: r.status,
    hash: r.hash, definition: r.definition, pendingHash: r.pending_hash, pendingDefinition: r.pending_definition,
    firstSeenAt: iso(r.first_seen_at)!, changedAt: iso(r.changed_at), approvedAt: iso(r.approved_at), approvedBy: r.approved_by,
  };
}
