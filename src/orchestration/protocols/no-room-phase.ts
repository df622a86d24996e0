import type { ProtocolEvent } from '../protocol-event';
import type { ProtocolExecutionContext } from '../protocol-strategy';
import { phaseEdge, traceStep } from '../protocol-steps.util';
import { budgetSpentText, PARAGRAPH_BREAK } from './prompts';

/** The final call's prompt, cut as far as it can be, is more than the turn token budget leaves. */
export interface NoRoom {
  noRoom: number;
  left: number;
}

/**
 * The action phase of a final call the turn token budget cannot hold, on either chat protocol:
 * no model call, an `llm_skipped` trace record, the notice as the phase's text, the phase closed
 * `token_budget`. `open` false when the phase was already opened (a two-stage phase that goes on).
 */
export function* noRoomPhase(ctx: ProtocolExecutionContext, at: { phaseIndex: number; cycleIndex: number; wrote: boolean; open: boolean }, r: NoRoom): Generator<ProtocolEvent, void, undefined> {
  if (at.open) yield* phaseEdge(ctx, 'start', 'action_phase', at.phaseIndex, at.cycleIndex);
  traceStep(ctx, 'llm_skipped', { phaseIndex: at.phaseIndex, reason: 'token_budget', promptTokens: r.noRoom, leftTokens: r.left });
  yield { type: 'chunk', content: (at.wrote ? PARAGRAPH_BREAK : '') + budgetSpentText(r.noRoom, r.left) };
  yield* phaseEdge(ctx, 'end', 'action_phase', at.phaseIndex, at.cycleIndex, 'token_budget');
}
