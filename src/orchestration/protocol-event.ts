import type { LlmUsage } from '../llm/llm-adapter.port';

/** The three phases of the SSE envelope (docs/API.md). */
export type PhaseName = 'action_phase' | 'tool_phase' | 'complete';

/**
 * Why a turn ended (`done.stopReason`). `max_tokens`: the answer was cut off by the model's token
 * limit (`finish_reason: length`); `duplicate_limit` / `no_progress`: the loop-strike budget was
 * spent, by a repeated call or by a call that learned nothing new; `content_loop`: the answer (or
 * reasoning) repeated one passage back to back and was stopped (docs/API.md, Loops).
 */
export type StopReason = 'final_answer' | 'cycle_budget' | 'duplicate_limit' | 'no_progress' | 'content_loop' | 'max_iterations' | 'max_tokens' | 'token_budget' | 'cancelled' | 'error';

export type NoticeCode = 'duplicate_tool_call' | 'duplicate_limit_reached' | 'cycle_budget_reached' | 'invalid_tool_arguments' | 'response_truncated' | 'no_progress' | 'content_loop' | 'tool_interrupted';

/** The notice of an answer the model's token limit cut off. */
export const TRUNCATED_NOTICE = { type: 'notice', code: 'response_truncated', message: 'The answer was cut off: the model reached its token limit (finish_reason: length).' } as const;

export interface ToolCallView {
  id: string;
  name: string;
  /** the arguments as a JSON string */
  arguments: string;
}

/** Usage summed over every model call of the turn. */
export interface TurnUsage extends LlmUsage {
  llmCalls: number;
  /** the largest single prompt of the turn: the turn token budget reads the next call's prompt as at least this */
  largestPromptTokens?: number;
}

/**
 * What a protocol generator yields. The SSE layer adds the envelope (requestId, projectId,
 * conversationId, seq, phase, phaseIndex, cycleIndex); `checkpoint` is internal (stored on the
 * run, never sent). Exhaustive `switch (event.type)` everywhere it is consumed.
 */
export type ProtocolEvent =
  | { type: 'phase'; status: 'start' | 'end'; phase: PhaseName; phaseIndex: number; cycleIndex: number; reason?: string }
  | { type: 'chunk'; content: string }
  | { type: 'tool_calls'; calls: ToolCallView[] }
  | {
      type: 'tool_progress';
      tool: string;
      callId: string;
      action: 'calling' | 'completed' | 'failed' | 'refused';
      params: unknown;
      isError: boolean;
      /** raw output: only when the request asked for debugShowToolResults */
      output?: unknown;
      outcome?: string;
      /** how long the call ran (completed / failed) */
      durationMs?: number;
    }
  | { type: 'tool_phase'; toolId: string; stage: string; message: string; metadata?: Record<string, unknown> }
  | {
      type: 'sources';
      data: unknown[];
      sourceTypes: string[];
      ragCount: number;
      webCount: number;
      confidence: string;
      /** the last retrieval's metrics (plus `ragCalls` when several ran); null when no retrieval ran */
      metrics: Record<string, unknown> | null;
    }
  | { type: 'notice'; code: NoticeCode; message: string }
  | { type: 'error'; code: string; message: string; retryable: boolean }
  | {
      /** a call waits for a person; the run engine stores it (status awaiting_approval) and adds `expiresAt` */
      type: 'approval_required';
      approvalId: string;
      tool: string;
      callId: string;
      /** as shown to users: masked like tool_progress params */
      arguments: unknown;
      /** why it waits (ApprovalNeed.reason) */
      reason: string;
      expiresAt?: string;
    }
  | {
      type: 'approval_decided';
      approvalId: string;
      decision: 'approve' | 'deny';
      /** approved with arguments a person edited */
      edited: boolean;
      /** the API key id that decided, null without keys; `timeout` when the approval expired */
      by: string | null;
      reason?: string;
    }
  /** `midCall`: stored as a call starts (its takeover knows it was cut off); a drain does not hand the run over there, the call runs first */
  | { type: 'checkpoint'; phaseIndex: number; state: Record<string, unknown>; midCall?: boolean }
  | { type: 'paused'; resumeFromPhaseIndex: number }
  | { type: 'done'; fullContent: string; stopReason: StopReason; usage: TurnUsage };

export type ProtocolEventType = ProtocolEvent['type'];

export function emptyUsage(): TurnUsage {
  return { promptTokens: 0, completionTokens: 0, totalTokens: 0, llmCalls: 0 };
}

export function addUsage(total: TurnUsage, u: LlmUsage | undefined): void {
  total.llmCalls += 1;
  if (!u) return;
  total.promptTokens += u.promptTokens;
  total.completionTokens += u.completionTokens;
  total.totalTokens += u.totalTokens;
  if (u.reasoningTokens !== undefined) total.reasoningTokens = (total.reasoningTokens ?? 0) + u.reasoningTokens;
  if (u.cachedTokens !== undefined) total.cachedTokens = (total.cachedTokens ?? 0) + u.cachedTokens;
  if (u.estimated) total.estimated = true;
  total.largestPromptTokens = Math.max(total.largestPromptTokens ?? 0, u.promptTokens);
}
