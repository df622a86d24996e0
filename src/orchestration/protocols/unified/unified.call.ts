import type { CompletedToolCall } from '../../../llm/tool-call-accumulator';
import type { ToolRunResult } from '../../../tools/tool-definition';
import type { ProtocolEvent } from '../../protocol-event';
import type { ProtocolExecutionContext } from '../../protocol-strategy';
import { toolErrorStage, toolFinishedEvent } from '../../protocol-steps.util';
import { argumentPolicyOf } from '../../untrusted-output';
import type { AsyncEventQueue } from './async-event-queue';

/**
 * One call of a tool step, its progress pushed into the step's queue as it happens:
 * `calling`, the tool's own stages, then `completed`|`failed`. A call that waits for a person
 * (outcome `approval_required`) gets no closing event here: it has not run, and is closed by
 * {@link finishCall} once it has (or was declined).
 */
export async function runOne(ctx: ProtocolExecutionContext, call: CompletedToolCall, queue: AsyncEventQueue<ProtocolEvent>): Promise<ToolRunResult> {
  if (ctx.signal.aborted) return cancelledResult(call);
  queue.push({ type: 'tool_progress', tool: call.name, callId: call.id, action: 'calling', params: ctx.tools.redactArgs(call.name, call.args), isError: false });
  const result = await invoke(ctx, call, call.arguments, queue);
  if (waitsForPerson(ctx, result)) return result;
  finishCall(ctx, call, result, queue);
  return result;
}

/** True when the call did not run because a person must decide first, and this turn can ask one. */
export function waitsForPerson(ctx: ProtocolExecutionContext, result: ToolRunResult): boolean {
  return result.outcome === 'approval_required' && ctx.approvals !== undefined;
}

/**
 * Hands the call to the tool runner. With `ctx.approvals` the runner is told the conversation's
 * approval setting, so a call the policy reserves for a person comes back `approval_required`
 * unless `granted` (a person approved it; `argumentsJson` then holds their edit, if any).
 */
export async function invoke(
  ctx: ProtocolExecutionContext,
  call: CompletedToolCall,
  argumentsJson: string,
  queue: AsyncEventQueue<ProtocolEvent>,
  granted = false,
): Promise<ToolRunResult> {
  let result: ToolRunResult;
  try {
    result = await ctx.tools.run(
      { name: call.name, arguments: argumentsJson, callId: call.id },
      {
        projectId: ctx.projectId,
        requestId: ctx.requestId,
        signal: ctx.signal,
        progress: (p) => queue.push({ type: 'tool_phase', toolId: call.name, stage: p.stage, message: p.message, ...(p.metadata ? { metadata: p.metadata } : {}) }),
        ...argumentPolicyOf(ctx),
        ...(ctx.approvals ? { approval: { setting: ctx.approvals.setting, ...(granted ? { granted: true } : {}) } } : {}),
      },
    );
    // only what a tool returned is untrusted output; a call that waits returned nothing of the tool
    if (result.outcome !== 'approval_required') ctx.untrusted?.learn(result.outputText);
  } catch (err) {
    // the ToolRunner port never throws; a broken implementation still gets an answer for the model
    const message = err instanceof Error ? err.message : String(err);
    result = { ...cancelledResult(call), outcome: 'exception', output: { error: 'exception', message }, outputText: JSON.stringify({ error: 'exception', message }) };
  }
  return result;
}

/** Closes a call's progress: its error stage (if it failed) and `completed`|`failed`. */
export function finishCall(ctx: ProtocolExecutionContext, call: CompletedToolCall, result: ToolRunResult, queue: AsyncEventQueue<ProtocolEvent>): void {
  const failure = toolErrorStage(ctx, call, result);
  if (failure) queue.push(failure);
  queue.push(toolFinishedEvent(ctx, call, result));
}

export function cancelledResult(call: CompletedToolCall): ToolRunResult {
  const output = { error: 'cancelled', message: 'cancelled' };
  return {
    toolName: call.name, args: call.args, outcome: 'cancelled', output, outputText: JSON.stringify(output),
    truncated: false, isError: true, latencyMs: 0, sources: [], signature: null,
  };
}
