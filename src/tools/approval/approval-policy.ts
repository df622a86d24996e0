import type { ApprovalNeed, ApprovalSetting, ToolDefinition } from '../tool-definition';

/** How MCP tools that no configured name covers are treated (TOOLS_APPROVAL_DEFAULT). */
export type McpApprovalDefault = 'destructive' | 'all' | 'none';

const NOT_REQUIRED: ApprovalNeed = { required: false, reason: 'none' };

/**
 * Which calls wait for a person: decided here and nowhere else, from the configuration
 * (TOOLS_REQUIRE_APPROVAL names and globs), the conversation's setting (`always`) and, for
 * tools that describe themselves (MCP annotations), TOOLS_APPROVAL_DEFAULT. Built-in tools
 * never wait unless configured: they only read.
 */
export class ToolApprovalPolicy {
  private readonly patterns: RegExp[];

  constructor(
    required: readonly string[],
    private readonly mcpDefault: McpApprovalDefault = 'destructive',
  ) {
    this.patterns = required.map(globPattern);
  }

  /** The policy of a tool before any conversation setting: what `GET /api/tools` shows. */
  of(def: ToolDefinition): ApprovalNeed {
    if (this.patterns.some((p) => p.test(def.name))) return { required: true, reason: 'configured' };
    if (def.origin === 'builtin') return NOT_REQUIRED;
    if (this.mcpDefault === 'all') return { required: true, reason: 'mcp_default_all' };
    if (this.mcpDefault === 'none') return NOT_REQUIRED;
    const hints = def.hints ?? {};
    if (hints.destructive === true) return { required: true, reason: 'destructive' };
    if (hints.readOnly !== true) return { required: true, reason: 'not_read_only' };
    return NOT_REQUIRED;
  }

  /** A call in a conversation: `always` asks for every call. */
  need(def: ToolDefinition, setting: ApprovalSetting): ApprovalNeed {
    if (setting === 'always') return { required: true, reason: 'conversation_always' };
    return this.of(def);
  }
}

/** `name`, or a glob where `*` stands for any characters (`fs__write*`). */
function globPattern(glob: string): RegExp {
  const escaped = glob.split('*').map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&'));
  return new RegExp(`^${escaped.join('.*')}$`);
}
