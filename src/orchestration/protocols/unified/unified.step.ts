import type { ModelStream, ModelStreamResult } from '../../model-stream';
import { addUsage, TRUNCATED_NOTICE, type ProtocolEvent } from '../../protocol-event';
import type { ProtocolExecutionContext } from '../../protocol-strategy';
import { offeredTools, phaseEdge, traceLateDeltas, traceStep } from '../../protocol-steps.util';
import { actionStream } from '../action-stream';
import { AFTER_LOOP, PARAGRAPH_BREAK, temperatureFor } from '../prompts';
import { assembleMessages } from './unified.context-budget';
import type { StepMessages } from './unified.context-budget';
import { iterationsSpent, type FinalReason } from './unified.loop-budgets';
import type { StepOutcome, TurnSetup, TurnState } from './unified.turn';
import { ToolCallGuard } from '../../tool-call-guard';
import { budgetFinalCall, budgetToolCall } from '../../loops/budget-prompt';
import { notePrompt } from '../../loops/token-budget';
import type { NoRoom } from '../no-room-phase';

/**
 * Opens a model step: builds the request inside the context budget and starts the stream.
 * `token_budget` instead, and nothing opened, when the turn token budget cannot hold a call that
 * may use tools: the turn writes its final answer instead.
 */
export function* startStep(ctx: ProtocolExecutionContext, s: TurnState, t: TurnSetup, why?: FinalReason, after: StepMessages[] = []): Generator<ProtocolEvent, ModelStream | 'token_budget' | NoRoom, undefined> {
  const final = why !== undefined;
  const step = s.modelSteps + 1;
  const latest = [...s.steps].reverse().find((x) => x.assistant.content?.trim())?.assistant.content ?? undefined;
  const offered = final ? [] : offeredTools(ctx, t.specs, { index: step, calledThisTurn: [...s.executed.values()].map((e) => e.name), latestModelText: latest });
  const assembled = assembleMessages({ system: t.systemFor(offered), history: t.history, user: t.user, steps: after.length ? [...s.steps, ...after] : s.steps, specs: offered, budget: t.budget });
  const turnBudget = ctx.budgets.turnTokenBudget;
  // the turn token budget measures the request before it goes (issue 46): tool outputs can make it far larger than the last
  const budgeted = !turnBudget
    ? undefined
    : final
      ? budgetFinalCall(turnBudget, s.usage, s.promptGauge, assembled.messages, t.budget.maxResponseTokens)
      : budgetToolCall(turnBudget, s.usage, s.promptGauge, assembled.messages, offered, t.budget.maxResponseTokens);
  if (turnBudget && !budgeted) return 'token_budget';
  // not even the final answer's prompt fits what is left: no call is made (the budget is not crossed)
  if (budgeted && !budgeted.fits) return { noRoom: budgeted.promptTokens, left: (turnBudget ?? 0) - s.usage.totalTokens };
  const messages = budgeted?.messages ?? assembled.messages;
  const maxTokens = budgeted?.maxTokens ?? t.budget.maxResponseTokens;
  s.promptGauge = budgeted?.gauge;
  s.phaseIndex += 1;
  s.modelSteps = step;
  if (!final) s.lastOffered = offered;
  yield* phaseEdge(ctx, 'start', 'action_phase', s.phaseIndex, s.cycleIndex);
  traceStep(ctx, 'llm_request', {
    phase: 'action_phase',
    phaseIndex: s.phaseIndex,
    step: s.modelSteps,
    messages: messages.length,
    tools: offered.map((x) => x.name),
    toolChoice: final ? 'none' : 'auto',
    // which budget forced it, as two-stage traces it (metrics and spans read it)
    ...(final ? { forced: why } : {}),
    temperature: temperatureFor(ctx.mode),
    maxTokens,
    ...assembled.report,
    ...(budgeted ? { turnBudget: { promptTokens: budgeted.promptTokens, cutChars: budgeted.cutChars } } : {}),
  });
  return actionStream(ctx, messages, final ? undefined : offered, maxTokens, {
    stopAtFirstCompleteCall: false,
    ignoreToolCalls: final,
    lead: s.wrote ? PARAGRAPH_BREAK : undefined,
    contentLoop: ctx.contentLoop,
    // the call after a loop: should it loop too, the turn ends with what it said before (one copy)
    ...(why === 'content_loop' ? AFTER_LOOP : {}),
  });
}

/** Closes a model step's action phase and decides: run its calls, or end the turn. */
export function* endStep(ctx: ProtocolExecutionContext, s: TurnState, res: ModelStreamResult): Generator<ProtocolEvent, StepOutcome, undefined> {
  addUsage(s.usage, res.usage);
  notePrompt(s.promptGauge, res.usage);
  traceLateDeltas(ctx, s.phaseIndex, res);
  if (res.text.length > 0) s.wrote = true;
  const end = (reason: string) => phaseEdge(ctx, 'end', 'action_phase', s.phaseIndex, s.cycleIndex, reason);
  if (ctx.signal.aborted) {
    yield* end('cancelled');
    return { kind: 'final', stopReason: 'cancelled' };
  }
  const error = res.error;
  if (error) {
    traceStep(ctx, 'llm_error', { phaseIndex: s.phaseIndex, step: s.modelSteps, ...error });
    yield* end('error');
    return { kind: 'final', stopReason: 'error', error };
  }
  const callCount = res.calls.length + res.invalid.length;
  traceStep(ctx, 'llm_response', {
    phaseIndex: s.phaseIndex,
    step: s.modelSteps,
    finishReason: res.finishReason ?? null,
    textChars: res.text.length,
    reasoningChars: res.reasoningChars,
    toolCalls: res.calls.map((c) => ({ id: c.id, name: c.name })),
    invalidCalls: res.invalid.length,
    usage: res.usage ?? null,
    ...(res.loop ? { contentLoop: { in: res.loop.in, period: res.loop.period, repeats: res.loop.repeats } } : {}),
  });
  if (res.loop) {
    // the response repeated itself: stopped where the detector fired, its calls dropped
    const guard = new ToolCallGuard(ctx);
    const verdict = yield* guard.contentLoop(s, res.loop, s.phaseIndex);
    yield* end('content_loop');
    if (verdict === 'end') return { kind: 'final', stopReason: 'content_loop' };
    return { kind: 'content_loop', instruction: guard.contentLoopInstruction(res.loop, res.text), said: guard.saidBeforeLoop(res.loop, res.text) };
  }
  if (callCount === 0) {
    if (res.finishReason === 'length') {
      yield TRUNCATED_NOTICE;
      yield* end('max_tokens');
      return { kind: 'final', stopReason: 'max_tokens' };
    }
    yield* end('final_answer');
    return { kind: 'final', stopReason: 'final_answer' };
  }
  if (iterationsSpent(s.modelSteps, ctx.budgets)) {
    // the last response stands; its calls are not run and get no tool messages
    traceStep(ctx, 'max_iterations_reached', { maxIterations: ctx.budgets.maxIterations, unrunCalls: res.calls.map((c) => c.name) });
    yield* end('max_iterations');
    return { kind: 'final', stopReason: 'max_iterations' };
  }
  yield* end('tool_calls');
  return { kind: 'run_tools' };
}
