import { addUsage, TRUNCATED_NOTICE, type ProtocolEvent } from '../../protocol-event';
import type { ProtocolExecutionContext } from '../../protocol-strategy';
import { phaseEdge, traceLateDeltas, traceStep } from '../../protocol-steps.util';
import { PARAGRAPH_BREAK } from '../prompts';
import { FORCED_FINAL_FALLBACK } from '../two-stage/two-stage.messages';
import { startStep } from './unified.step';
import { finish, type TurnSetup, type TurnState } from './unified.turn';

/** The instruction of the final, tool-free model call, by why the loop stopped. */
const FINAL_ANSWER_INSTRUCTION = {
  max_iterations: 'The tool-call budget of this turn is used up. Do not call any tools. Write your final answer to the user now, using the tool results above.',
  duplicate_limit: 'Tool calls were repeated too often. Do not call any tools. Write your final answer to the user now, using the tool results above.',
} as const;

/** Why the loop stopped before the model answered by itself. */
export type FinalReason = keyof typeof FINAL_ANSWER_INSTRUCTION;

/**
 * The loop stopped (maxIterations, or the loop-strike limit): one more model call, offered no
 * tools, writes the answer from what the tools returned — as two-stage's forced final answer.
 * `stopReason` still says why the loop stopped.
 */
export async function* finalAnswer(ctx: ProtocolExecutionContext, s: TurnState, t: TurnSetup, why: FinalReason): AsyncGenerator<ProtocolEvent, void, undefined> {
  if (ctx.signal.aborted) return yield* finish(ctx, s, 'cancelled');
  // the tool-free call keeps the last step's prompt, so it reads the tool results against the same guidance
  const system = `${t.systemFor(s.lastOffered ?? t.specs)}\n\n${FINAL_ANSWER_INSTRUCTION[why]}`;
  const stream = yield* startStep(ctx, s, { ...t, systemFor: () => system, specs: [] }, why);
  const res = yield* stream.step();
  addUsage(s.usage, res.usage);
  traceLateDeltas(ctx, s.phaseIndex, res);
  if (res.text.length > 0) s.wrote = true;
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
