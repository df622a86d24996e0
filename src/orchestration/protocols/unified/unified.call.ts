import type { CompletedToolCall } from '../../../llm/tool-call-accumulator';
import type { ToolRunResult } from '../../../tools/tool-definition';
import type { ProtocolEvent } from '../../protocol-event';
import type { ProtocolExecutionContext } from '../../protocol-strategy';
import { toolErrorStage, toolFinishedEvent } from '../../protocol-steps.util';
import { argumentPolicyOf } from '../../untrusted-output';
import type { AsyncEventQueue } from './async-event-queue';

/**
 * One call of a tool step, its progress pushed into the step's queue as it happens:
 * `calling`, the tool's own stages, then `completed`|`failed`.
 */
export async function runOne(ctx: ProtocolExecutionContext, call: CompletedToolCall, queue: AsyncEventQueue<ProtocolEvent>): Promise<ToolRunResult> {
  if (ctx.signal.aborted) return cancelledResult(call);
  queue.push({ type: 'tool_progress', tool: call.name, callId: call.id, action: 'calling', params: ctx.tools.redactArgs(call.name, call.args), isError: false });
  let result: ToolRunResult;
  try {
    result = await ctx.tools.run(
      { name: call.name, arguments: call.arguments, callId: call.id },
      {
        projectId: ctx.projectId,
        requestId: ctx.requestId,
        signal: ctx.signal,
        progress: (p) => queue.push({ type: 'tool_phase', toolId: call.name, stage: p.stage, message: p.message, ...(p.metadata ? { metadata: p.metadata } : {}) }),
        ...argumentPolicyOf(ctx),
      },
    );
    ctx.untrusted?.learn(result.outputText);
  } catch (err) {
    // the ToolRunner port never throws; a broken implementation still gets an answer for the model
    const message = err instanceof Error ? err.message : String(err);
    result = { ...cancelledResult(call), outcome: 'exception', output: { error: 'exception', message }, outputText: JSON.stringify({ error: 'exception', message }) };
  }
  const failure = toolErrorStage(ctx, call, result);
  if (failure) queue.push(failure);
  queue.push(toolFinishedEvent(ctx, call, result));
  return result;
}

export function cancelledResult(call: CompletedToolCall): ToolRunResult {
  const output = { error: 'cancelled', message: 'cancelled' };
  return {
    toolName: call.name, args: call.args, outcome: 'cancelled', output, outputText: JSON.stringify(output),
    truncated: false, isError: true, latencyMs: 0, sources: [], signature: null,
  };
}
