import { Inject, Injectable, Logger } from '@nestjs/common';
import { createHash } from 'node:crypto';
import { AppConfigService } from '../config/app-config.service';
import { TRACE_SINK, type TraceSink } from '../trace/trace-sink.port';
import type { ToolDefinition } from './tool-definition';
import { ToolsException, ToolsExceptionCode } from './tools.exception';

/** A registry change, for listeners such as the NarrowTopK tool index. */
export type ToolRegistryChange =
  | { kind: 'registered'; tool: ToolDefinition }
  | { kind: 'changed'; tool: ToolDefinition; previousHash: string }
  | { kind: 'unregistered'; name: string };

export interface ToolSummary {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
  origin: string;
  available: boolean;
  /** why not, when the tool says (an MCP tool: `definition changed`, `awaiting approval`, `server failed`) */
  unavailable?: string;
}

/**
 * Every tool Orion can run: built-ins plus MCP tools, filtered once by TOOLS_ALLOW /
 * TOOLS_DENY. Names are unique; MCP tools are namespaced `<server>__<tool>` by the MCP
 * manager, so no server can shadow a built-in or another server. Each registration is
 * traced as `tool_registration`; a definition hash tells real changes from re-listings.
 */
@Injectable()
export class ToolRegistryService {
  private readonly logger = new Logger('ToolRegistry');
  private readonly tools = new Map<string, { def: ToolDefinition; hash: string }>();
  private readonly listeners = new Set<(c: ToolRegistryChange) => void>();
  private readonly allow: Set<string>;
  private readonly deny: Set<string>;

  constructor(
    config: AppConfigService,
    @Inject(TRACE_SINK) private readonly trace: TraceSink,
  ) {
    this.allow = new Set(config.list('TOOLS_ALLOW'));
    this.deny = new Set(config.list('TOOLS_DENY'));
  }

  /** Whether allow/deny lists let this name in. */
  permits(name: string): boolean {
    if (this.deny.has(name)) return false;
    return this.allow.size === 0 || this.allow.has(name);
  }

  /**
   * Adds or replaces a tool. Returns false when the allow/deny lists keep it out.
   * Replacing is allowed only for the same origin (an MCP server re-listing its tools).
   */
  register(def: ToolDefinition): boolean {
    if (!/^[A-Za-z0-9_-]{1,64}$/.test(def.name)) {
      throw new ToolsException(ToolsExceptionCode.INVALID_TOOL_NAME, `tool name "${def.name}" must match [A-Za-z0-9_-]{1,64}`);
    }
    if (!this.permits(def.name)) {
      this.logger.log(`tool ${def.name} (${def.origin}) left out by TOOLS_ALLOW/TOOLS_DENY`);
      return false;
    }
    const hash = definitionHash(def);
    const existing = this.tools.get(def.name);
    if (existing && existing.def.origin !== def.origin) {
      throw new ToolsException(
        ToolsExceptionCode.NAME_TAKEN,
        `tool ${def.name} is already registered by ${existing.def.origin}; ${def.origin} cannot replace it`,
      );
    }
    this.tools.set(def.name, { def, hash });
    if (!existing) {
      this.trace.record({ type: 'tool_registration', details: { name: def.name, origin: def.origin, hash } });
      this.emit({ kind: 'registered', tool: def });
    } else if (existing.hash !== hash) {
      this.trace.record({ type: 'tool_definition_changed', details: { name: def.name, origin: def.origin, previousHash: existing.hash, hash } });
      this.emit({ kind: 'changed', tool: def, previousHash: existing.hash });
    }
    return true;
  }

  unregister(name: string): void {
    const existing = this.tools.get(name);
    if (!existing) return;
    this.tools.delete(name);
    this.trace.record({ type: 'tool_unregistered', details: { name, origin: existing.def.origin } });
    this.emit({ kind: 'unregistered', name });
  }

  get(name: string): ToolDefinition | undefined {
    return this.tools.get(name)?.def;
  }

  hashOf(name: string): string | undefined {
    return this.tools.get(name)?.hash;
  }

  /** All registered tools, sorted by name. */
  all(): ToolDefinition[] {
    return [...this.tools.values()].map((t) => t.def).sort((a, b) => a.name.localeCompare(b.name));
  }

  /** Registered tools that can run now. */
  async available(): Promise<ToolDefinition[]> {
    const all = this.all();
    const flags = await Promise.all(all.map((t) => safeAvailable(t)));
    return all.filter((_, i) => flags[i]);
  }

  async summaries(): Promise<ToolSummary[]> {
    const all = this.all();
    const flags = await Promise.all(all.map((t) => safeAvailable(t)));
    return all.map((t, i) => {
      const reason = flags[i] ? undefined : reasonOf(t);
      return { name: t.name, description: t.description, parameters: t.parameters, origin: t.origin, available: flags[i], ...(reason ? { unavailable: reason } : {}) };
    });
  }

  /** Subscribe to registrations, changes and removals; returns the unsubscribe function. */
  onChange(listener: (c: ToolRegistryChange) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private emit(change: ToolRegistryChange): void {
    for (const l of this.listeners) {
      try {
        l(change);
      } catch (err) {
        this.logger.error(`registry listener failed: ${(err as Error).message}`);
      }
    }
  }
}

async function safeAvailable(t: ToolDefinition): Promise<boolean> {
  try {
    return !!(await t.isAvailable());
  } catch {
    return false;
  }
}

function reasonOf(t: ToolDefinition): string | undefined {
  try {
    return t.unavailableReason?.();
  } catch {
    return undefined;
  }
}

/** sha256 over what the model sees of a tool (name, description, parameters). */
export function definitionHash(def: Pick<ToolDefinition, 'name' | 'description' | 'parameters'>): string {
  return createHash('sha256')
    .update(JSON.stringify([def.name, def.description, def.parameters]))
    .digest('hex')
    .slice(0, 16);
}
