import type { CompletedToolCall } from '../../../llm/tool-call-accumulator';
import type { ToolExecutionContext, ToolProgress, ToolRunResult } from '../../../tools/tool-definition';
import type { ProtocolEvent } from '../../protocol-event';
import type { ProtocolExecutionContext } from '../../protocol-strategy';
import { phaseEdge, shownArguments, toolErrorStage, toolFinishedEvent, traceStep } from '../../protocol-steps.util';
import type { ExecutedToolRecord } from '../../run-state/run-checkpoint';
import { resultDigest, ToolCallGuard } from '../../tool-call-guard';
import { progressDigest } from '../../loops/result-progress';
import { argumentPolicyOf } from '../../untrusted-output';
import { SourcesCollector } from '../unified/unified.sources';
import { forcedFinal, NOTICES } from './two-stage.loop-budgets';
import { noProgressMessage, toolResultMessage } from './two-stage.messages';
import { checkpoint, counters, type StepOutcome, type TurnState } from './two-stage.state';
import { askApproval, pendingCall } from './two-stage.approval';

/** Runs exactly one call through the ToolRunner and injects its result. */
export async function* toolPhase(
  ctx: ProtocolExecutionContext,
  s: TurnState,
  call: CompletedToolCall,
  signature: string | null,
  previous?: ExecutedToolRecord,
): AsyncGenerator<ProtocolEvent, StepOutcome, undefined> {
  const phaseIndex = ++s.phaseIndex;
  s.cycleIndex += 1;
  yield* phaseEdge(ctx, 'start', 'tool_phase', phaseIndex, s.cycleIndex);
  yield { type: 'tool_progress', tool: call.name, callId: call.id, action: 'calling', params: ctx.tools.redactArgs(call.name, call.args), isError: false };
  return yield* runCall(ctx, s, phaseIndex, call, signature, previous);
}

/**
 * The tool phase of a checkpoint whose call waited for a person when the run stopped: it goes
 * on in the same phase. After a pause the person is asked again (a new approval); after a
 * takeover (`resumeFrom.takeover`) the same approval is awaited, pending or already decided.
 */
export async function* continuePendingCall(ctx: ProtocolExecutionContext, s: TurnState): AsyncGenerator<ProtocolEvent, StepOutcome, undefined> {
  const pending = s.pendingApproval!;
  const call = pendingCall(pending);
  const previous = pending.signature ? s.executed.findLast((e) => e.signature === pending.signature) : undefined;
  return yield* runCall(ctx, s, s.phaseIndex, call, pending.signature, previous, { awaitAgain: ctx.resumeFrom?.takeover ? pending.approvalId : undefined });
}

/** How a call of a tool phase starts (every field absent: as the model made it, asking a person when the policy says so). */
export interface CallStart {
  /** the approval to await again (a takeover of a run that waited for a person) */
  awaitAgain?: string;
  /** a person approved this call already: it runs without asking again */
  granted?: boolean;
  /** a person is asked first, for this reason (a cut-off call that needs approval: `interrupted`) */
  ask?: string;
  /** it does not run: the model reads that it was cut off by an instance's death and may or may not have run */
  interrupted?: boolean;
}

export async function* runCall(
  ctx: ProtocolExecutionContext,
  s: TurnState,
  phaseIndex: number,
  asked: CompletedToolCall,
  signature: string | null,
  previous: ExecutedToolRecord | undefined,
  start: CallStart = {},
): AsyncGenerator<ProtocolEvent, StepOutcome, undefined> {
  let call = asked;
  const progress: ToolProgress[] = [];
  const toolCtx: ToolExecutionContext = { projectId: ctx.projectId, requestId: ctx.requestId, signal: ctx.signal, progress: (p) => progress.push(p), ...argumentPolicyOf(ctx) };
  const request = { name: call.name, arguments: call.arguments, callId: call.id };
  const granted = (): ToolExecutionContext => (ctx.approvals ? { ...toolCtx, approval: { setting: ctx.approvals.setting, granted: true } } : toolCtx);
  let result: ToolRunResult | undefined;
  let ask = ctx.approvals ? start.ask : undefined;
  if (start.interrupted) result = ctx.tools.interrupted?.(request, toolCtx) ?? interruptedResult(call);
  else if (!ask) {
    // the continuation of a run whose instance dies while the call runs knows it was cut off
    yield* running(ctx, s, phaseIndex, call, signature, !!start.granted);
    // with approvals on, a call the policy says needs a person comes back without running
    result = await ctx.tools.run(request, start.granted ? granted() : ctx.approvals ? { ...toolCtx, approval: { setting: ctx.approvals.setting } } : toolCtx);
    if (result.outcome === 'approval_required' && ctx.approvals) {
      ask = result.approval?.reason ?? 'required';
      result = undefined;
      s.runningCall = undefined;
    }
  }
  if (!result) {
    const wait = yield* askApproval(ctx, s, call, phaseIndex, ask ?? 'required', signature, start.awaitAgain);
    if (wait.kind === 'paused') return { kind: 'paused', resumeFromPhaseIndex: phaseIndex };
    if (wait.kind === 'cancelled') {
      yield* phaseEdge(ctx, 'end', 'tool_phase', phaseIndex, s.cycleIndex, 'cancelled');
      return { kind: 'final', stopReason: 'cancelled' };
    }
    const d = wait.decision;
    if (d.decision === 'approve') {
      // edited arguments (checked when they were given) run in place of the model's
      if (d.arguments) call = { ...call, arguments: JSON.stringify(d.arguments), args: d.arguments };
      yield* running(ctx, s, phaseIndex, call, signature, true);
      result = await ctx.tools.run({ name: call.name, arguments: call.arguments, callId: call.id }, granted());
    } else {
      // the model reads that the user declined, and why, as this call's result
      result = ctx.tools.decline!(request, toolCtx, d.reason);
    }
  }
  s.runningCall = undefined;
  ctx.untrusted?.learn(result.outputText);
  for (const p of progress) yield { type: 'tool_phase', toolId: call.name, stage: p.stage, message: p.message, metadata: p.metadata };
  const failure = toolErrorStage(ctx, call, result);
  if (failure) yield failure;

  yield toolFinishedEvent(ctx, call, result);
  if (SourcesCollector.reports(call.name, result)) {
    // the turn's sources so far, right after the tool that found them (before the answer
    // streams); each one replaces the last, so the turn's last `sources` event is complete
    const sources = SourcesCollector.from(s.sources);
    sources.addToolResult(call.name, result);
    s.sources = sources.snapshot();
    yield sources.toEvent();
  }
  const shownArgs = shownArguments(ctx, call);
  const guard = new ToolCallGuard(ctx);
  // a new call (not a rerun) whose result this tool already gave under other arguments: nothing new
  const sameAs = previous ? undefined : guard.noProgressOf(call.name, signature, result, s.executed);
  s.injected.push({
    role: 'system',
    // the earlier result as the model reads it: its boxed "[Tool result #N …]" message
    content: sameAs
      ? noProgressMessage(s.cycleIndex, call.name, shownArgs, guard.noProgressText(call.name, `[Tool result #${s.executed.indexOf(sameAs as ExecutedToolRecord) + 1}]`))
      : toolResultMessage(s.cycleIndex, call.name, shownArgs, result),
  });
  const digest = progressDigest(result);
  s.executed.push({
    signature: signature ?? `unsigned:${call.id}`,
    name: call.name,
    callId: call.id,
    arguments: shownArgs,
    phaseIndex,
    outcome: result.outcome,
    resultDigest: resultDigest(result.outputText),
    ...(digest ? { progressDigest: digest } : {}),
  });
  if (previous) yield* rerunVerdict(ctx, s, call, previous, s.executed[s.executed.length - 1]);
  if (sameAs) yield* guard.noProgress(s, call, sameAs, phaseIndex);

  if (ctx.signal.aborted) {
    yield* phaseEdge(ctx, 'end', 'tool_phase', phaseIndex, s.cycleIndex, 'cancelled');
    return { kind: 'final', stopReason: 'cancelled' };
  }
  yield* phaseEdge(ctx, 'end', 'tool_phase', phaseIndex, s.cycleIndex, result.outcome);
  yield { type: 'checkpoint', phaseIndex, state: checkpoint(s) as unknown as Record<string, unknown> };

  if (forcedFinal(counters(s), ctx.budgets) === 'cycle_budget') {
    traceStep(ctx, 'orchestration_notice', { code: 'cycle_budget_reached', executedTools: s.cycleIndex });
    yield { type: 'notice', code: 'cycle_budget_reached', message: NOTICES.cycleBudget(ctx.budgets.maxPhaseCycles) };
  }
  // natural pause point: right after a tool result is traced and checkpointed
  if (ctx.control.pauseRequested()) return { kind: 'paused', resumeFromPhaseIndex: phaseIndex };
  return { kind: 'run_again' };
}

/**
 * Stores, just before the call runs, a checkpoint that names it (issue 44): an instance that
 * continues the run after this one died knows the call was cut off. Its arguments are kept only
 * when the stream shows them unmasked (a secret is never stored).
 */
function* running(ctx: ProtocolExecutionContext, s: TurnState, phaseIndex: number, call: CompletedToolCall, signature: string | null, approved: boolean): Generator<ProtocolEvent, void, undefined> {
  const shown = shownArguments(ctx, call);
  s.runningCall = { call: { id: call.id, name: call.name, arguments: shown }, signature, ...(shown !== call.arguments && { masked: true }), ...(approved && { approved: true }) };
  yield { type: 'checkpoint', phaseIndex, state: checkpoint(s) as unknown as Record<string, unknown>, midCall: true };
}

/** The `interrupted` result when the runner has none to give (runners built by hand in tests). */
function interruptedResult(call: CompletedToolCall): ToolRunResult {
  const output = { error: 'interrupted', message: 'this call was running when the instance running this turn stopped; it may or may not have run, and it was not run again' };
  return { toolName: call.name, args: call.args, outcome: 'interrupted', output, outputText: JSON.stringify(output), truncated: false, isError: true, latencyMs: 0, sources: [], signature: null };
}

/** A `rerun` tool ran again: the same result as its signature's previous run is a loop strike. */
function* rerunVerdict(
  ctx: ProtocolExecutionContext,
  s: TurnState,
  call: CompletedToolCall,
  previous: ExecutedToolRecord,
  now: ExecutedToolRecord,
): Generator<ProtocolEvent, void, undefined> {
  const sameResult = previous.resultDigest !== undefined && previous.resultDigest === now.resultDigest;
  yield* new ToolCallGuard(ctx).rerunVerdict(s, call, now.signature, sameResult, { firstPhaseIndex: previous.phaseIndex, phaseIndex: now.phaseIndex });
}
