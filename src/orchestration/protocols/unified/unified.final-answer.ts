import { addUsage, TRUNCATED_NOTICE, type ProtocolEvent } from '../../protocol-event';
import type { ProtocolExecutionContext } from '../../protocol-strategy';
import { phaseEdge, traceLateDeltas, traceStep } from '../../protocol-steps.util';
import { PARAGRAPH_BREAK } from '../prompts';
import { FORCED_FINAL_FALLBACK } from '../two-stage/two-stage.messages';
import { ToolCallGuard } from '../../tool-call-guard';
import type { FinalReason } from './unified.loop-budgets';
import { startStep } from './unified.step';
import { noRoomPhase, type NoRoom } from '../no-room-phase';
import { notePrompt } from '../../loops/token-budget';
import { finish, type TurnSetup, type TurnState } from './unified.turn';

/** The instruction of the final, tool-free model call, by why the loop stopped (a content loop has the guard's own). */
const FINAL_ANSWER_INSTRUCTION: Record<Exclude<FinalReason, 'content_loop'>, string> = {
  max_iterations: 'The tool-call budget of this turn is used up. Do not call any tools. Write your final answer to the user now, using the tool results above.',
  duplicate_limit: 'Tool calls were repeated too often. Do not call any tools. Write your final answer to the user now, using the tool results above.',
  token_budget: 'The token budget of this turn is nearly used up. Do not call any tools. Write a short final answer to the user now, using the tool results above.',
  no_progress: 'Tool calls kept returning results that were already known. Do not call any tools. Write your final answer to the user now, using the tool results above.',
};

/** The turn token budget cannot hold the final call's prompt: the turn ends with a notice instead of a call. */
function* budgetSpent(ctx: ProtocolExecutionContext, s: TurnState, r: NoRoom): Generator<ProtocolEvent, void, undefined> {
  s.phaseIndex += 1;
  yield* noRoomPhase(ctx, { phaseIndex: s.phaseIndex, cycleIndex: s.cycleIndex, wrote: s.wrote, open: true }, r);
  s.wrote = true;
  yield* finish(ctx, s, 'token_budget');
}

/** After a content loop: what the model said up to the loop's first copy, and the guard's instruction. */
export interface AfterLoop {
  instruction: string;
  said: string;
}

/**
 * The loop stopped (maxIterations, the loop-strike limit, a content loop): one more model call,
 * offered no tools, writes the answer from what the tools returned — as two-stage's forced final
 * answer. `stopReason` still says why the loop stopped. After a content loop the call also reads
 * what the model said up to the loop; if this call loops too, the guard decides: the first loop
 * of the turn gets one more such call, a second ends the turn with what was streamed.
 */
export async function* finalAnswer(ctx: ProtocolExecutionContext, s: TurnState, t: TurnSetup, why: FinalReason, afterLoop?: AfterLoop): AsyncGenerator<ProtocolEvent, void, undefined> {
  if (ctx.signal.aborted) return yield* finish(ctx, s, 'cancelled');
  // the tool-free call keeps the last step's prompt, so it reads the tool results against the same guidance
  const instruction = why === 'content_loop' ? (afterLoop?.instruction ?? '') : FINAL_ANSWER_INSTRUCTION[why];
  const system = `${t.systemFor(s.lastOffered ?? t.specs)}\n\n${instruction}`;
  // what the user already saw of the looping answer, as the model's own message
  const said = afterLoop?.said.trim() ? [{ assistant: { role: 'assistant' as const, content: afterLoop.said }, tools: [] }] : [];
  const stream = yield* startStep(ctx, s, { ...t, systemFor: () => system, specs: [] }, why, said);
  if (stream === 'token_budget') throw new Error('a final call is budgeted as final, never refused as a call with tools');
  if ('noRoom' in stream) return yield* budgetSpent(ctx, s, stream);
  const res = yield* stream.step();
  addUsage(s.usage, res.usage);
  notePrompt(s.promptGauge, res.usage);
  traceLateDeltas(ctx, s.phaseIndex, res);
  if (res.text.length > 0) s.wrote = true;
  if (res.loop && !res.error && !ctx.signal.aborted) {
    // the tool-free call repeated itself too
    const guard = new ToolCallGuard(ctx);
    const verdict = yield* guard.contentLoop(s, res.loop, s.phaseIndex);
    traceStep(ctx, 'llm_response', { phaseIndex: s.phaseIndex, step: s.modelSteps, forced: why, finishReason: res.finishReason ?? null, textChars: res.text.length, usage: res.usage ?? null, contentLoop: { in: res.loop.in, period: res.loop.period, repeats: res.loop.repeats } });
    yield* phaseEdge(ctx, 'end', 'action_phase', s.phaseIndex, s.cycleIndex, 'content_loop');
    if (verdict === 'end') return yield* finish(ctx, s, 'content_loop');
    return yield* finalAnswer(ctx, s, t, 'content_loop', { instruction: guard.contentLoopInstruction(res.loop, res.text), said: guard.saidBeforeLoop(res.loop, res.text) });
  }
  if (!res.error && !ctx.signal.aborted && res.text.trim() === '') {
    // the model still wrote nothing: the user gets an answer all the same
    yield { type: 'chunk', content: s.wrote ? PARAGRAPH_BREAK + FORCED_FINAL_FALLBACK : FORCED_FINAL_FALLBACK };
  }
  traceStep(ctx, 'llm_response', { phaseIndex: s.phaseIndex, step: s.modelSteps, forced: why, finishReason: res.finishReason ?? null, textChars: res.text.length, usage: res.usage ?? null });
  if (res.error) traceStep(ctx, 'llm_error', { phaseIndex: s.phaseIndex, step: s.modelSteps, ...res.error });
  // stopReason keeps saying why the loop stopped; the notice says the answer was cut off
  if (!res.error && res.finishReason === 'length') yield TRUNCATED_NOTICE;
  yield* phaseEdge(ctx, 'end', 'action_phase', s.phaseIndex, s.cycleIndex, ctx.signal.aborted ? 'cancelled' : res.error ? 'error' : why);
  yield* finish(ctx, s, res.error ? 'error' : why, res.error);
}
