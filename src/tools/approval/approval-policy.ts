import type { ApprovalNeed, ApprovalSetting, ToolDefinition } from '../tool-definition';

/** How MCP tools that no configured name covers are treated (TOOLS_APPROVAL_DEFAULT). */
export type McpApprovalDefault = 'destructive' | 'all' | 'none';

/** A project's override, set by an admin (`PUT /api/admin/projects/:projectId/tool-approvals`): names or globs. */
export interface ProjectApprovalOverride {
  require: readonly string[];
  exempt: readonly string[];
}

const NOT_REQUIRED: ApprovalNeed = { required: false, reason: 'none' };

/**
 * Which calls wait for a person: decided here and nowhere else. Precedence, lowest first:
 * 1. the configuration: TOOLS_REQUIRE_APPROVAL names and globs, else built-ins never wait and
 *    MCP tools follow TOOLS_APPROVAL_DEFAULT (by their annotations, `ToolDefinition.hints`);
 * 2. the project's override: a tool its `require` or `exempt` names waits or does not, whatever
 *    the configuration says; when both name it, the more specific pattern decides (an exact name
 *    over any glob, then the glob with more literal characters), and a tie waits;
 * 3. the conversation's setting `always`: every call waits.
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
  of(def: ToolDefinition, override?: ProjectApprovalOverride | null): ApprovalNeed {
    const project = override ? projectDecision(def.name, override) : null;
    if (project) return project;
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
  need(def: ToolDefinition, setting: ApprovalSetting, override?: ProjectApprovalOverride | null): ApprovalNeed {
    if (setting === 'always') return { required: true, reason: 'conversation_always' };
    return this.of(def, override);
  }
}

/** The project's word on a tool, or null when neither list names it. */
function projectDecision(name: string, override: ProjectApprovalOverride): ApprovalNeed | null {
  const require = bestMatch(name, override.require);
  const exempt = bestMatch(name, override.exempt);
  if (require === null && exempt === null) return null;
  if (exempt !== null && (require === null || exempt > require)) return { required: false, reason: 'project_exempt' };
  return { required: true, reason: 'project_require' };
}

/** How specific the most specific pattern matching `name` is (-1 … exact name highest), or null. */
function bestMatch(name: string, patterns: readonly string[]): number | null {
  let best: number | null = null;
  for (const p of patterns) {
    if (!globPattern(p).test(name)) continue;
    const score = p.includes('*') ? p.replace(/\*/g, '').length : Number.MAX_SAFE_INTEGER;
    if (best === null || score > best) best = score;
  }
  return best;
}

/** `name`, or a glob where `*` stands for any characters (`fs__write*`). */
export function globPattern(glob: string): RegExp {
  const escaped = glob.split('*').map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&'));
  return new RegExp(`^${escaped.join('.*')}$`);
}
