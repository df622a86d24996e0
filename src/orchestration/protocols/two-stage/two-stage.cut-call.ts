import type { ProtocolEvent } from '../../protocol-event';
import type { ProtocolExecutionContext } from '../../protocol-strategy';
import { traceStep } from '../../protocol-steps.util';
import { pendingCall } from './two-stage.approval';
import type { StepOutcome, TurnState } from './two-stage.state';
import { runCall, type CallStart } from './two-stage.tool-phase';

/**
 * The tool phase of a checkpoint whose call was running when the run's instance died (issue 44):
 * it goes on in the same phase, and the call may or may not have run. A read-only call (a
 * built-in, an MCP tool annotated `readOnlyHint`) runs again: a second run changes nothing. Any
 * other is not run again: a person is asked when it needs approval (reason `interrupted`),
 * otherwise its result is the outcome `interrupted`, which the model reads as it reads any
 * result, and the turn goes on with the next action phase. A call whose arguments were masked
 * when it was stored (a secret) cannot run again: it is `interrupted` too.
 */
export async function* continueCutCall(ctx: ProtocolExecutionContext, s: TurnState): AsyncGenerator<ProtocolEvent, StepOutcome, undefined> {
  const cut = s.runningCall!;
  s.runningCall = undefined;
  const call = pendingCall(cut);
  const previous = cut.signature ? s.executed.findLast((e) => e.signature === cut.signature) : undefined;
  const start = await howToGoOn(ctx, cut.call.name, !cut.masked, !!cut.approved);
  traceStep(ctx, 'tool_call_cut_off', { phaseIndex: s.phaseIndex, tool: call.name, callId: call.id, then: start.interrupted ? 'interrupted' : start.ask ? 'ask' : 'rerun' });
  return yield* runCall(ctx, s, s.phaseIndex, call, cut.signature, previous, start);
}

async function howToGoOn(ctx: ProtocolExecutionContext, tool: string, runnable: boolean, approved: boolean): Promise<CallStart> {
  if (runnable && ctx.tools.readOnly?.(tool) === true) return { granted: approved };
  if (runnable && ctx.approvals && (await ctx.tools.approvalNeed?.(tool, ctx.projectId, ctx.approvals.setting))?.required) return { ask: 'interrupted' };
  return { interrupted: true };
}
