import type { LlmMessage, LlmToolSpec } from '../../../llm/llm-adapter.port';
import type { ModelStream } from '../../model-stream';
import { addUsage, TRUNCATED_NOTICE, type ProtocolEvent, type StopReason } from '../../protocol-event';
import type { ProtocolExecutionContext } from '../../protocol-strategy';
import { offeredTools, phaseEdge, shownArguments, traceLateDeltas, traceStep } from '../../protocol-steps.util';
import { ToolCallGuard } from '../../tool-call-guard';
import { actionStream } from '../action-stream';
import { AFTER_LOOP, MAX_RESPONSE_TOKENS, PARAGRAPH_BREAK, temperatureFor } from '../prompts';
import type { ForcedReason } from './two-stage.loop-budgets';
import { FORCED_FINAL_FALLBACK, TWO_STAGE_SYSTEM_PROMPT, forcedFinalInstruction } from './two-stage.messages';
import { handleInvalid, refuseDuplicate } from './two-stage.refusals';
import type { StepOutcome, TurnState } from './two-stage.state';
import { toolPhase } from './two-stage.tool-phase';
import { budgetFinalCall, budgetToolCall, type BudgetedCall } from '../../loops/budget-prompt';
import { notePrompt } from '../../loops/token-budget';
import { noRoomPhase, type NoRoom } from '../no-room-phase';

/** What the loop carries from one model call to the next. */
export interface ActionContext {
  /** a budget forces this call to answer without tools */
  forced: ForcedReason | null;
  /** some answer text was streamed: the next phase's text starts after a paragraph break */
  wrote: boolean;
  /** a refused call does not end its action phase: the model is asked again in the same phase */
  continuing: boolean;
  /** the model's latest text: the next action phase's tools are re-ranked with it */
  latestText: string;
  /** content loops this turn (the ToolCallGuard: the first gets one tool-free call, a second ends the turn) */
  contentLoops: number;
  /** after a content loop: what the model said up to the loop, and the guard's instruction */
  afterLoop?: { instruction: string; said: string };
}

/**
 * Starts a model call: in a new action phase, or (after a refusal) in the same one. Tools are
 * offered unless a budget forces the answer; the turn token budget measures the request first
 * and forces it when a call with tools would not fit (issue 46).
 */
export function* startAction(ctx: ProtocolExecutionContext, s: TurnState, specs: LlmToolSpec[], a: ActionContext): Generator<ProtocolEvent, ModelStream | NoRoom, undefined> {
  const phaseIndex = a.continuing ? s.phaseIndex : s.phaseIndex + 1;
  const turnBudget = ctx.budgets.turnTokenBudget;
  let offered = !a.forced && specs.length > 0 ? offeredTools(ctx, specs, { index: phaseIndex, calledThisTurn: s.executed.map((e) => e.name), latestModelText: a.latestText || undefined }) : [];
  let budgeted: BudgetedCall | undefined;
  if (turnBudget && !a.forced) {
    budgeted = budgetToolCall(turnBudget, s.usage, s.promptGauge, modelMessages(ctx, s, a), offered.length ? offered : undefined, MAX_RESPONSE_TOKENS);
    if (!budgeted) {
      a.forced = 'token_budget';
      offered = [];
    }
  }
  if (turnBudget && a.forced) budgeted = budgetFinalCall(turnBudget, s.usage, s.promptGauge, modelMessages(ctx, s, a), MAX_RESPONSE_TOKENS);
  // not even the final answer's prompt fits what is left: no call is made (the budget is not crossed)
  if (budgeted && !budgeted.fits) return { noRoom: budgeted.promptTokens, left: (turnBudget ?? 0) - s.usage.totalTokens };
  const offerTools = offered.length > 0;
  const messages = budgeted?.messages ?? modelMessages(ctx, s, a);
  const maxTokens = budgeted?.maxTokens ?? MAX_RESPONSE_TOKENS;
  s.promptGauge = budgeted?.gauge;
  s.phaseIndex = phaseIndex;
  if (!a.continuing) yield* phaseEdge(ctx, 'start', 'action_phase', phaseIndex, s.cycleIndex);
  traceStep(ctx, 'llm_request', {
    phase: 'action_phase',
    phaseIndex,
    messages: messages.length,
    tools: offered.map((t) => t.name),
    toolChoice: offerTools ? 'auto' : 'none',
    forced: a.forced,
    temperature: temperatureFor(ctx.mode),
    ...(budgeted ? { maxTokens, turnBudget: { promptTokens: budgeted.promptTokens, cutChars: budgeted.cutChars } } : {}),
  });
  return actionStream(ctx, messages, offerTools ? offered : undefined, maxTokens, {
    stopAtFirstCompleteCall: true,
    ignoreToolCalls: !offerTools,
    lead: a.wrote ? PARAGRAPH_BREAK : undefined,
    contentLoop: ctx.contentLoop,
    // the call after a loop: should it loop too, the turn ends with what it said before (one copy)
    ...(a.forced === 'content_loop' ? AFTER_LOOP : {}),
  });
}

/** The turn token budget cannot hold the final call's prompt: the phase says so instead of calling the model. */
export function* budgetSpent(ctx: ProtocolExecutionContext, s: TurnState, a: ActionContext, r: NoRoom): Generator<ProtocolEvent, void, undefined> {
  const phaseIndex = a.continuing ? s.phaseIndex : ++s.phaseIndex;
  yield* noRoomPhase(ctx, { phaseIndex, cycleIndex: s.cycleIndex, wrote: a.wrote, open: !a.continuing }, r);
}

/** Closes the action phase; a new call gets its tool phase, a repeated one is refused. */
export async function* endAction(
  ctx: ProtocolExecutionContext,
  s: TurnState,
  specs: LlmToolSpec[],
  a: ActionContext,
  stream: ModelStream,
): AsyncGenerator<ProtocolEvent, StepOutcome, undefined> {
  const forced = a.forced;
  const res = stream.close();
  const phaseIndex = s.phaseIndex;
  addUsage(s.usage, res.usage);
  notePrompt(s.promptGauge, res.usage);
  traceLateDeltas(ctx, phaseIndex, res);

  if (ctx.signal.aborted) {
    yield* phaseEdge(ctx, 'end', 'action_phase', phaseIndex, s.cycleIndex, 'cancelled');
    return { kind: 'final', stopReason: 'cancelled' };
  }
  if (res.error) {
    traceStep(ctx, 'llm_error', { phaseIndex, ...res.error });
    yield* phaseEdge(ctx, 'end', 'action_phase', phaseIndex, s.cycleIndex, 'error');
    yield { type: 'error', code: `llm_${res.error.code}`, message: res.error.message, retryable: res.error.retryable };
    return { kind: 'final', stopReason: 'error' };
  }
  traceStep(ctx, 'llm_response', {
    phaseIndex,
    finishReason: res.finishReason ?? null,
    textChars: res.text.length,
    reasoningChars: res.reasoningChars,
    toolCall: res.calls[0] ? { name: res.calls[0].name, id: res.calls[0].id } : null,
    invalidCalls: res.invalid.length,
    stoppedEarly: res.stoppedEarly,
    usage: res.usage ?? null,
    ...(res.loop ? { contentLoop: { in: res.loop.in, period: res.loop.period, repeats: res.loop.repeats } } : {}),
  });

  const guard = new ToolCallGuard(ctx);
  if (res.loop) {
    // the response repeated itself: stopped where the detector fired, its calls dropped
    const verdict = yield* guard.contentLoop(a, res.loop, phaseIndex);
    yield* phaseEdge(ctx, 'end', 'action_phase', phaseIndex, s.cycleIndex, 'content_loop');
    if (verdict === 'end') return { kind: 'final', stopReason: 'content_loop' };
    return { kind: 'content_loop', instruction: guard.contentLoopInstruction(res.loop, res.text), said: guard.saidBeforeLoop(res.loop, res.text) };
  }

  const call = res.calls[0];
  if (forced && res.text.trim() === '') {
    // the model insisted on tools when none were offered: the user still gets an answer
    yield { type: 'chunk', content: FORCED_FINAL_FALLBACK };
  }
  if (forced || (!call && res.invalid.length === 0)) {
    const truncated = res.finishReason === 'length';
    if (truncated) yield TRUNCATED_NOTICE;
    // a forced answer keeps saying which budget forced it; the notice says it was cut off
    const stopReason: StopReason = forced ?? (truncated ? 'max_tokens' : 'final_answer');
    yield* phaseEdge(ctx, 'end', 'action_phase', phaseIndex, s.cycleIndex, stopReason);
    return { kind: 'final', stopReason };
  }
  if (!call) {
    // refused in the action phase, which goes on: only an executed tool opens a tool phase
    yield* handleInvalid(ctx, s, res.invalid[0], specs);
    return { kind: 'refused_duplicate' };
  }

  // the guard classifies the call against the turn's executed calls (one call per response: no twins);
  // signatures are stored as digests: checkpoints keep no argument values (secrets included)
  const verdict = guard.classify(call, (digest) => s.executed.findLast((e) => e.signature === digest));
  const signature = verdict.signature?.digest ?? null;
  const toolCalls: ProtocolEvent = { type: 'tool_calls', calls: [{ id: call.id, name: call.name, arguments: shownArguments(ctx, call) }] };
  if (verdict.kind === 'repeat') {
    yield toolCalls;
    yield* refuseDuplicate(ctx, s, call, verdict.earlier);
    return { kind: 'refused_duplicate' };
  }
  yield* phaseEdge(ctx, 'end', 'action_phase', phaseIndex, s.cycleIndex, 'tool_call');
  yield toolCalls;
  // a rerun compares its result with the latest run of its signature
  return yield* toolPhase(ctx, s, call, signature, verdict.kind === 'new' ? undefined : verdict.earlier);
}

/** System prompt, then injected tool results and refusals, then the conversation (and, forced, why it must answer now). */
function modelMessages(ctx: ProtocolExecutionContext, s: TurnState, a: ActionContext): LlmMessage[] {
  const system = ctx.systemContext ? `${TWO_STAGE_SYSTEM_PROMPT}\n\n${ctx.systemContext}` : TWO_STAGE_SYSTEM_PROMPT;
  const out: LlmMessage[] = [{ role: 'system', content: system }, ...s.injected, ...s.baseMessages];
  if (a.forced === 'content_loop' && a.afterLoop) {
    // what the user already saw, then why the model must write the answer once
    if (a.afterLoop.said.trim()) out.push({ role: 'assistant', content: a.afterLoop.said });
    out.push({ role: 'system', content: a.afterLoop.instruction });
  } else if (a.forced && a.forced !== 'content_loop') {
    out.push({ role: 'system', content: forcedFinalInstruction(a.forced) });
  }
  return out;
}
