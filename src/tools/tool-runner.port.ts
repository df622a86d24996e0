import type { LlmToolSpec } from '../llm/llm-adapter.port';
import type { ApprovalNeed, ApprovalSetting, RepeatPolicy, ToolExecutionContext, ToolRunResult } from './tool-definition';

/** A tool call as a protocol hands it over: arguments as the model sent them (usually a JSON string). */
export interface ToolCallRequest {
  name: string;
  arguments: string | Record<string, unknown>;
  /** the model's call id, for correlation in traces */
  callId?: string;
}

/**
 * The port protocols use to run tools (ToolRunnerService implements it). `run` never throws:
 * unknown tools, bad arguments, timeouts and crashes all come back as a classified result.
 */
export interface ToolRunner {
  run(call: ToolCallRequest, ctx: ToolExecutionContext): Promise<ToolRunResult>;
  /**
   * The canonical signature `name + action + canonical JSON (keys sorted, defaults applied) + projectId`,
   * or null when the arguments are not a JSON object.
   */
  signature(call: ToolCallRequest, projectId: string): string | null;
  /** Tools available now, as offered to a model (optionally only these names). */
  specs(filter?: { names?: string[] }): Promise<LlmToolSpec[]>;
  /** Arguments safe to show on a stream: properties marked `x-secret` and known secrets masked. */
  redactArgs(name: string, args: unknown): unknown;
  /** What a repeated identical call of this tool gets (absent: `refuse`). */
  repeatPolicy?(name: string): RepeatPolicy;
  /**
   * Whether running a call of this tool again changes nothing outside (built-ins, which only
   * read; MCP tools annotated `readOnlyHint: true`): a call cut off by an instance's death may
   * run again elsewhere (issue 44). Absent: no tool is.
   */
  readOnly?(name: string): boolean;
  /**
   * Whether a call of this tool waits for a person in this project (configuration, MCP
   * annotations, the project's override, then the conversation's `setting`).
   */
  approvalNeed?(name: string, projectId: string, setting: ApprovalSetting): Promise<ApprovalNeed>;
  /**
   * The result a declined call gets (outcome `denied`, traced like any call): the model reads
   * that the user declined it, and why. Nothing of the tool runs.
   */
  decline?(call: ToolCallRequest, ctx: ToolExecutionContext, reason: string): ToolRunResult;
  /**
   * The result of a call cut off by an instance's death that is not run again (outcome
   * `interrupted`, traced like any call): the model reads that it may or may not have run.
   */
  interrupted?(call: ToolCallRequest, ctx: ToolExecutionContext): ToolRunResult;
  /**
   * Arguments a person edited, checked as a model's would be before the call runs: the tool's
   * schema (defaults applied), configured secrets and the tool's own argument rules. Refused:
   * the reasons, for a 400.
   */
  checkArguments?(name: string, args: unknown): { ok: true; value: Record<string, unknown> } | { ok: false; errors: string[] };
}

export const TOOL_RUNNER = Symbol('TOOL_RUNNER');
