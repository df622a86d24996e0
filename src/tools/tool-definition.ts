import { WorkspacePathError } from '../common/workspace/workspace-path.util';
/**
 * What a tool is, for every protocol: a name the model sees, a JSON-Schema for its
 * arguments, where it came from, whether it can run now, and how to run it.
 * Tools never run directly: ToolRunner validates, times out, caps, classifies and traces.
 */

export type ToolOrigin = 'builtin' | `mcp:${string}`;

/**
 * What a second call with the same canonical signature in one turn gets: `refuse` (not run; the
 * earlier result is pointed out) or `rerun` (runs again: a status tool can be polled; the same
 * result as last time counts as a loop strike).
 */
export type RepeatPolicy = 'refuse' | 'rerun';

/** Progress a tool reports about itself ("Searching the knowledge base…"). */
export interface ToolProgress {
  stage: string;
  message: string;
  metadata?: Record<string, unknown>;
}

export interface ToolExecutionContext {
  projectId: string;
  requestId: string;
  /** aborted on cancel, client disconnect or the tool's timeout */
  signal: AbortSignal;
  /** optional progress sink; tools own their messages */
  progress?: (p: ToolProgress) => void;
  /**
   * The caller's policy on arguments (the chat turn's untrusted-output rule): asked with the
   * validated arguments as JSON before the tool runs; a refusal means the tool does not run.
   * Never passed on to the tool itself.
   */
  argumentPolicy?: (argsJson: string) => ArgumentRefusal | null;
  /**
   * Whether a person must approve the call first (docs/API.md, Approvals). Absent: the call
   * never waits (tests, benchmarks, tool-only callers that chose so). A call the policy says
   * needs approval and that is not `granted` does not run: it comes back with outcome
   * `approval_required` and `approval` saying why. Never passed on to the tool itself.
   */
  approval?: ToolApprovalContext;
}

/** `policy`: the tool's configured policy decides; `always`: every call waits (conversation setting). */
export type ApprovalSetting = 'policy' | 'always';

export interface ToolApprovalContext {
  setting: ApprovalSetting;
  /** a person approved this very call (or, tool-only, listed it in `approvedCalls`) */
  granted?: boolean;
}

/** Why a call waits for a person; `reason` is a short code shown to users (`configured`, `destructive`, …). */
export interface ApprovalNeed {
  required: boolean;
  reason: string;
}

/** Why a call is refused by policy: a short code for traces and a sentence for the model (never the value). */
export interface ArgumentRefusal {
  reason: string;
  why: string;
  /** values of the arguments to mask in the trace of the refused call */
  mask?: string[];
}

/** What `execute` returns: any JSON value, plus optional sources for the unified route. */
export interface ToolExecuteResult {
  /** JSON-serializable result handed to the model */
  output: unknown;
  /** the tool itself says this is an error the model should see (`is_error`) */
  isError?: boolean;
  /** citations for the `sources` event (rag and web tools) */
  sources?: ToolSource[];
}

export interface ToolSource {
  type: 'rag' | 'web';
  title: string;
  url?: string;
  path?: string;
  snippet?: string;
  score?: number;
  confidence?: 'high' | 'medium' | 'low';
  [key: string]: unknown;
}

export interface ToolDefinition {
  readonly name: string;
  readonly description: string;
  /** JSON Schema (draft-07/2020-12 subset ajv understands). Properties with `"x-secret": true` are redacted in traces. */
  readonly parameters: Record<string, unknown>;
  readonly origin: ToolOrigin;
  /** per-tool timeout override (ms); default TOOL_TIMEOUT_MS */
  readonly timeoutMs?: number;
  /** `action` part of the canonical signature (e.g. an MCP tool's method); default '' */
  readonly action?: string;
  /** what a repeated identical call gets; default `refuse` (TOOLS_RERUN overrides) */
  readonly repeat?: RepeatPolicy;
  /**
   * what the tool says of itself (MCP annotations `readOnlyHint`, `destructiveHint`; every built-in
   * only reads): the approval default reads them, and a read-only call cut off by an instance's
   * death runs again on the instance that continues its turn
   */
  readonly hints?: { readOnly?: boolean; destructive?: boolean };
  /**
   * The tool's own rules on arguments that need no I/O (a path that leaves the project folder),
   * asked before a person's edited arguments are accepted: the reason they cannot be used, or null.
   * The tool still checks everything when it runs.
   */
  checkArguments?(args: Record<string, unknown>): string | null;
  isAvailable(): boolean | Promise<boolean>;
  /** short reason while unavailable (an MCP tool's `definition changed`), shown in listings and refusals */
  unavailableReason?(): string | undefined;
  /** Receives validated arguments with defaults applied. May throw; the runner classifies. */
  execute(args: Record<string, unknown>, ctx: ToolExecutionContext): Promise<ToolExecuteResult>;
}

/** `cancelled`: the caller's signal (a cancelled or disconnected turn) stopped the call before or while it ran. */
/**
 * `approval_required`: the call needs a person's approval and has none yet; nothing of the tool ran.
 * `denied`: a person declined the call (or its approval timed out); nothing of the tool ran.
 */
/**
 * `interrupted` (issue 44): the call was running when the instance running its turn died; it may
 * or may not have run, and the turn's continuation did not run it again (it is not read-only).
 */
export type ToolOutcome = 'success' | 'validation_error' | 'unavailable' | 'rate_limited' | 'timeout' | 'exception' | 'cancelled' | 'approval_required' | 'denied' | 'interrupted';

/** What ToolRunner.run returns; it never throws. */
export interface ToolRunResult {
  toolName: string;
  /** arguments after validation (defaults applied) or, on validation failure, as received */
  args: unknown;
  outcome: ToolOutcome;
  /**
   * the tool's output (success) or an error object `{error, message, details?}` the model can read;
   * when `truncated`, the `{truncated, note, originalBytes, partial}` object the model was given instead
   */
  output: unknown;
  /** output as the JSON string given to the model, capped at TOOL_RESULT_MAX_BYTES */
  outputText: string;
  truncated: boolean;
  isError: boolean;
  latencyMs: number;
  sources: ToolSource[];
  /** canonical signature (null when the arguments were not a JSON object) */
  signature: string | null;
  /** outcome `approval_required`: why the call waits for a person */
  approval?: ApprovalNeed;
}

/** Errors a tool throws to choose its outcome explicitly. */
export class ToolFailure extends Error {
  constructor(
    readonly outcome: Exclude<ToolOutcome, 'success'>,
    message: string,
    readonly details?: unknown,
  ) {
    super(message);
    this.name = 'ToolFailure';
  }
}

/** A path the workspace refused is a tool's `validation_error` (rethrows anything else). */
export function asToolFailure(err: unknown): never {
  if (err instanceof WorkspacePathError) throw new ToolFailure(err.outcome, err.message);
  throw err;
}
