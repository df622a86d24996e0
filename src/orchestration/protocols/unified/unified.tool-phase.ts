import type { LlmToolSpec } from '../../../llm/llm-adapter.port';
import type { ModelStreamResult } from '../../model-stream';
import type { ProtocolEvent } from '../../protocol-event';
import type { ProtocolExecutionContext } from '../../protocol-strategy';
import { phaseEdge, shownArguments } from '../../protocol-steps.util';
import { ToolCallGuard } from '../../tool-call-guard';
import { awaitingCheckpoint, checkpointEvent, type RestoredAwaiting } from './unified.checkpoint';
import { runToolStep, stepMessages } from './unified.tool-step';
import type { TurnState } from './unified.turn';

/** A step continued from its checkpoint (issue 44): the calls answered as cut off, and, when it waited for a person, what it had asked. */
export interface ContinuedStep {
  cutOff: ReadonlySet<string>;
  exact: ReadonlySet<string>;
  /** the step's checkpoint as it was stored before its calls (an awaiting one is built on it) */
  snapshot?: Extract<ProtocolEvent, { type: 'checkpoint' }>;
  /** the step waited for a person: its tool phase is open already, and its approvals are awaited again */
  awaiting?: RestoredAwaiting;
}

/**
 * One tool step: every call of the response, then its messages join the conversation.
 * `spent` once the loop-strike limit is; `cancelled` when the turn was cancelled, also while a
 * call waited for a person. `continued` (issue 44): a step continued from its checkpoint; its
 * calls and the checkpoint before them were stored then, and, when it waited for a person, its
 * tool phase was opened too (it goes on in that phase, as two-stage's pending call does).
 */
export async function* toolPhase(
  ctx: ProtocolExecutionContext,
  s: TurnState,
  res: Pick<ModelStreamResult, 'text' | 'calls' | 'invalid'>,
  specs: LlmToolSpec[],
  continued?: ContinuedStep,
): AsyncGenerator<ProtocolEvent, 'next' | 'spent' | 'cancelled', undefined> {
  // like two-stage: the calls are shown where the model made them, before their tool phase opens
  if (!continued && res.calls.length > 0) yield { type: 'tool_calls', calls: res.calls.map((c) => ({ id: c.id, name: c.name, arguments: shownArguments(ctx, c) })) };
  // nothing of the step has run: another instance can run its calls (each exactly once). Taken
  // as of the action phase, stored once the tool phase opened: tool_calls and that edge still go
  // in one write, and a continuation supersedes the edge and opens the phase again
  const before = continued?.snapshot ?? checkpointEvent(ctx, s, s.phaseIndex, res);
  s.phaseIndex += 1;
  s.cycleIndex += 1;
  const phaseIndex = s.phaseIndex;
  if (!continued?.awaiting) yield* phaseEdge(ctx, 'start', 'tool_phase', phaseIndex, s.cycleIndex);
  if (!continued) yield before;

  const outcomes = yield* runToolStep(ctx, { step: s.cycleIndex, phaseIndex }, res.calls, res.invalid, specs, s, {
    ...(continued && { cutOff: continued.cutOff, exact: continued.exact }),
    ...(continued?.awaiting && { awaiting: continued.awaiting }),
    // as the step asks a person: what ran and what waits, at the tool phase it waits in
    asking: (step) => awaitingCheckpoint(before, phaseIndex, step),
  });
  for (const o of outcomes) if (o.kind === 'ran' && o.result) s.sources.addToolResult(o.name, o.result);
  if (ctx.signal.aborted || outcomes.some((o) => o.interrupted)) {
    yield* phaseEdge(ctx, 'end', 'tool_phase', phaseIndex, s.cycleIndex, 'cancelled');
    return 'cancelled';
  }
  s.steps.push(stepMessages(res.text, res.calls, res.invalid, outcomes));
  // a refused repeat is no tool error: the call was not run, and the model was told why
  const allOk = outcomes.every((o) => o.kind === 'refused' || (o.kind !== 'invalid' && o.result && o.result.outcome === 'success' && !o.result.isError));
  yield* phaseEdge(ctx, 'end', 'tool_phase', phaseIndex, s.cycleIndex, allOk ? 'success' : 'tool_errors');
  // the step is complete (model call and every result): another instance can go on from here
  yield checkpointEvent(ctx, s, phaseIndex);
  return new ToolCallGuard(ctx).spent(s) ? 'spent' : 'next';
}
