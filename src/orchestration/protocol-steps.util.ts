import type { CompletedToolCall } from '../llm/tool-call-accumulator';
import type { ToolRunResult } from '../tools/tool-definition';
import type { ProtocolEvent } from './protocol-event';
import type { ProtocolExecutionContext } from './protocol-strategy';
import type { LlmToolSpec } from '../llm/llm-adapter.port';
import type { ModelStreamResult } from './model-stream';
import { toolRetrievalTrace, toolsOfLastTurn } from './modes/tool-index/tool-selection';

/** What every chat protocol emits the same way: phase edges, finished tools, shown arguments. */

/** A trace record of this turn. */
export function traceStep(ctx: ProtocolExecutionContext, type: string, details: Record<string, unknown>): void {
  ctx.trace.record({ requestId: ctx.requestId, projectId: ctx.projectId, type, details });
}

/**
 * A model response that went on after its finish (a malformed stream): what was dropped is
 * traced as the notice `deltas_after_finish`, counts only (the dropped text is never kept).
 */
export function traceLateDeltas(ctx: ProtocolExecutionContext, phaseIndex: number, res: Pick<ModelStreamResult, 'ignoredAfterFinish' | 'finishReason'>): void {
  const late = res.ignoredAfterFinish;
  if (!late) return;
  traceStep(ctx, 'orchestration_notice', { code: 'deltas_after_finish', phaseIndex, finishReason: res.finishReason ?? null, ignored: { ...late } });
}

/** A phase edge: the `orchestration_phase_start|end` trace and the `phase` event. */
export function* phaseEdge(
  ctx: ProtocolExecutionContext,
  status: 'start' | 'end',
  phase: 'action_phase' | 'tool_phase',
  phaseIndex: number,
  cycleIndex: number,
  reason?: string,
): Generator<ProtocolEvent, void, undefined> {
  traceStep(ctx, status === 'start' ? 'orchestration_phase_start' : 'orchestration_phase_end', { phase, phaseIndex, cycleIndex, reason: reason ?? null });
  yield { type: 'phase', status, phase, phaseIndex, cycleIndex, ...(reason ? { reason } : {}) };
}

/** Longest tool error message a stream shows; the model gets the whole result. */
const ERROR_MESSAGE_MAX = 300;

/**
 * A failed call's `tool_phase` error stage: what went wrong, in the tool's own words, so a client
 * can show an error step with its reason rather than only the outcome's name. None for a call
 * that succeeded or that a cancel cut short (the turn's own end says that).
 */
export function toolErrorStage(ctx: ProtocolExecutionContext, call: Pick<CompletedToolCall, 'id' | 'name'>, result: ToolRunResult): ProtocolEvent | undefined {
  if ((result.outcome === 'success' && !result.isError) || ctx.signal.aborted) return undefined;
  const out = result.output as { message?: unknown; error?: unknown } | null | undefined;
  const said = typeof out?.message === 'string' && out.message ? out.message : typeof out?.error === 'string' && out.error ? out.error : result.outputText || result.outcome;
  const message = said.length > ERROR_MESSAGE_MAX ? `${said.slice(0, ERROR_MESSAGE_MAX - 1)}…` : said;
  return { type: 'tool_phase', toolId: call.name, stage: 'error', message, metadata: { callId: call.id, outcome: result.outcome } };
}

/** The `tool_progress` that closes a call: completed or failed, raw output only on request. */
export function toolFinishedEvent(ctx: ProtocolExecutionContext, call: Pick<CompletedToolCall, 'id' | 'name'>, result: ToolRunResult): ProtocolEvent {
  const failed = result.outcome !== 'success' || result.isError;
  return {
    type: 'tool_progress',
    tool: call.name,
    callId: call.id,
    action: failed ? 'failed' : 'completed',
    params: ctx.tools.redactArgs(call.name, result.args),
    isError: failed,
    outcome: result.outcome,
    durationMs: result.latencyMs,
    ...(ctx.debugShowToolResults ? { output: result.output } : {}),
  };
}

/** The call's arguments as the stream may show them: unchanged unless a secret had to be masked. */
export function shownArguments(ctx: ProtocolExecutionContext, call: CompletedToolCall): string {
  const shown = ctx.tools.redactArgs(call.name, call.args);
  return JSON.stringify(shown) === JSON.stringify(call.args) ? call.arguments : JSON.stringify(shown);
}

/**
 * The tools one model step is offered. At or below TOOL_RETRIEVAL_THRESHOLD, the whole catalog
 * (nothing changes); above it, sticky top-K for the turn's request re-ranked with the model's
 * latest text, plus every tool called in this turn and in the conversation's last turn, traced
 * as `tool_retrieval`. Calls are still validated against the whole catalog: a model that names a
 * real tool it was not offered this step gets it run, not a refusal.
 */
export function offeredTools(
  ctx: ProtocolExecutionContext,
  catalog: LlmToolSpec[],
  step: { index: number; calledThisTurn: readonly string[]; latestModelText?: string },
): LlmToolSpec[] {
  if (!ctx.toolSelection || catalog.length === 0) return catalog;
  const request = [...ctx.messages].reverse().find((m) => m.role === 'user')?.content ?? '';
  const selection = ctx.toolSelection.select({
    catalog,
    request: typeof request === 'string' ? request : '',
    latestModelText: step.latestModelText,
    calledThisTurn: step.calledThisTurn,
    // the history carries no tool calls; the previous turn's stored steps say which ran
    lastTurnTools: [...new Set([...toolsOfLastTurn(ctx.messages), ...(ctx.lastTurnTools ?? [])])],
  });
  if (selection.applied) ctx.trace.record(toolRetrievalTrace(selection, { requestId: ctx.requestId, projectId: ctx.projectId, step: step.index }));
  return selection.tools;
}
