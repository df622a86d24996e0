import type { ApprovalNeed, ToolOutcome } from '../../tools/tool-definition';
import { ORCHESTRATION_MODES } from '../../config/env.schema';
import type { ContentLoopSettings } from '../loops/content-loop';

/** The two tool-only modes (one list with ORCHESTRATION_DEFAULT_MODE's); a caller always gets the mode it asked for. */
export const TOOL_MODES = ORCHESTRATION_MODES;
export type ToolMode = (typeof TOOL_MODES)[number];

/**
 * The contract's codes (docs/API.md), plus Orion's `internal_error` (the mode itself failed
 * unexpectedly). A decided call that ran and failed is not an error of the orchestration: its
 * execution's `outcome` says how the tool fared.
 */
export type ToolCallsError =
  | 'no_tool_calls'
  /** the decision's text repeated one passage back to back and it called no tool */
  | 'content_loop'
  | 'invalid_args'
  | 'narrow_topk_unavailable'
  | 'no_candidates'
  | 'llm_error'
  | 'internal_error';

export interface DecidedCall {
  toolName: string;
  /** parsed arguments, or the raw text when they were not a JSON object */
  args: unknown;
}

/**
 * A tool's outcome, or `interrupted`: a keyed execution's instance died while the call ran, and
 * the call is not read-only, so the execution that continued it did not run it again (it may or
 * may not have run).
 */
export type ExecutionOutcome = ToolOutcome | 'interrupted';

export interface ToolExecution {
  toolName: string;
  args: unknown;
  outcome: ExecutionOutcome;
  resultObject: unknown;
  latencyMs: number;
  /** true for every outcome but `success` (always present, as docs/API.md's example shows) */
  isError: boolean;
  /** outcome `approval_required`: why the call waits for a person; it did not run */
  approval?: ApprovalNeed;
}

/** A call a person approved earlier (the request's `approvedCalls`). */
export interface ApprovedCall {
  tool: string;
  arguments: Record<string, unknown>;
}

export interface ToolCandidate {
  name: string;
  score: number;
}

/**
 * What a tool-only orchestration returns (docs/API.md "Tool-only orchestration"). `isSuccess` is true
 * when the model decided at least one call and every execution succeeded. Orion adds
 * `requestId`, `errorMessage` and, for NarrowTopK, the `candidates` it retrieved.
 */
export interface ToolCallsResult {
  mode: ToolMode;
  exposedTools: string[];
  decidedCalls: DecidedCall[];
  executions: ToolExecution[];
  isSuccess: boolean;
  error: ToolCallsError | null;
  totalLatencyMs: number;
  requestId: string;
  errorMessage?: string;
  candidates?: ToolCandidate[];
}

export interface ToolModeOptions {
  maxCalls: number;
  narrowTopK: number;
  minScoreThreshold: number;
  locale: string;
}

/** What a mode gets: the input alone (no history), who it is about, and its options. */
export interface ToolModeInput {
  requestId: string;
  projectId: string;
  userInput: string;
  participantIds: string[];
  options: ToolModeOptions;
  signal: AbortSignal;
  /** calls a person approved earlier: these run without waiting (each entry once) */
  approvedCalls?: ApprovedCall[];
  /** the content-loop detector's thresholds (LOOP_CONTENT_REPEATS); absent: the defaults */
  contentLoop?: ContentLoopSettings;
  /** a keyed execution's progress store (absent without an `Idempotency-Key`: nothing is stored) */
  journal?: ExecutionJournal;
}

/** The model's decision, as a continued execution needs it: the calls as decided and as shown. */
export interface DecidedPlan {
  exposedTools: string[];
  candidates?: ToolCandidate[];
  /** the calls, in order, with the model's arguments (what runs) */
  calls: DecidedCall[];
  /** the same, masked as the caller is shown them */
  shown: DecidedCall[];
}

/** What a keyed execution had done when it was last stored. */
export interface ExecutionProgress {
  plan: DecidedPlan | null;
  executions: ToolExecution[];
  /** the call that was running, or null between calls */
  running: number | null;
}

/**
 * Where a keyed execution stores its progress as it goes (keyed-executions.ts), and what a
 * retry that took it over found there. A write refused because the key was taken over throws an
 * error named `ExecutionTakenOver`: the execution stops, and that error passes through untouched.
 */
export const EXECUTION_TAKEN_OVER = 'ExecutionTakenOver';

export interface ExecutionJournal {
  readonly resumed: ExecutionProgress | null;
  decided(plan: DecidedPlan): Promise<void>;
  starting(index: number): Promise<void>;
  finished(executions: ToolExecution[]): Promise<void>;
}

/** Progress of a tool-only run, for the streaming route. */
export type ToolModeProgress =
  | { stage: 'PrepareTools'; exposedTools: string[]; candidates?: ToolCandidate[] }
  | { stage: 'LLMDecision'; decidedCalls: DecidedCall[] }
  | { stage: 'ExecuteTool'; index: number; toolName: string; outcome: ExecutionOutcome; latencyMs: number }
  | { stage: 'Finished'; isSuccess: boolean; error: ToolCallsError | null; totalLatencyMs: number };

/**
 * A tool-only mode: Classic or NarrowTopK. Collected under PROTOCOL_STRATEGIES next to the chat
 * protocols (`kind` tells them apart). It yields progress and returns the result; it never
 * hands over to another mode.
 */
export interface ToolModeStrategy {
  readonly kind: 'tool-mode';
  readonly name: ToolMode;
  execute(input: ToolModeInput): AsyncGenerator<ToolModeProgress, ToolCallsResult, undefined>;
}
