import type { CompletedToolCall } from '../llm/tool-call-accumulator';
import type { ToolRunResult } from '../tools/tool-definition';
import type { ProtocolEvent } from './protocol-event';
import type { ProtocolExecutionContext } from './protocol-strategy';

/** What every chat protocol emits the same way: phase edges, finished tools, shown arguments. */

/** A trace record of this turn. */
export function traceStep(ctx: ProtocolExecutionContext, type: string, details: Record<string, unknown>): void {
  ctx.trace.record({ requestId: ctx.requestId, projectId: ctx.projectId, type, details });
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
    ...(ctx.debugShowToolResults ? { output: result.output } : {}),
  };
}

/** The call's arguments as the stream may show them: unchanged unless a secret had to be masked. */
export function shownArguments(ctx: ProtocolExecutionContext, call: CompletedToolCall): string {
  const shown = ctx.tools.redactArgs(call.name, call.args);
  return JSON.stringify(shown) === JSON.stringify(call.args) ? call.arguments : JSON.stringify(shown);
}
