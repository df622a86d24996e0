import { emptyUsage, type ProtocolEvent, type StopReason, type TurnUsage } from '../../protocol-event';
import type { ProtocolExecutionContext } from '../../protocol-strategy';
import { parseTwoStageCheckpoint, TWO_STAGE_CHECKPOINT_VERSION, type TwoStageCheckpoint } from '../../run-state/run-checkpoint';
import type { TwoStageCounters } from './two-stage.loop-budgets';

/** How one iteration of the loop ended (typed outcomes: every case is handled). */
export type StepOutcome =
  | { kind: 'run_again' }
  | { kind: 'refused_duplicate' }
  /** the response repeated itself and was stopped: the next action phase writes the answer once, without tools */
  | { kind: 'content_loop'; instruction: string; said: string }
  | { kind: 'final'; stopReason: StopReason }
  | { kind: 'paused'; resumeFromPhaseIndex: number };

/** Mutable state of one turn; exactly what a checkpoint stores (less its version). */
export type TurnState = Omit<TwoStageCheckpoint, 'schemaVersion'> & { usage: TurnUsage };

/** A new turn's state, or a resumed one's from its checkpoint. */
export function initialState(ctx: ProtocolExecutionContext): TurnState {
  if (ctx.resumeFrom) {
    const c = parseTwoStageCheckpoint(ctx.resumeFrom.state);
    // a resumed leg remembers what the tool output of the earlier legs brought in
    for (const m of c.injected) ctx.untrusted?.learn(m.content ?? '');
    // a fork's usage is its own: the parent's calls before the checkpoint stay the parent's (its
    // prompts are the fork's too: the largest and the gauge stay, for the turn token budget)
    const largest = c.usage.largestPromptTokens ? { largestPromptTokens: c.usage.largestPromptTokens } : {};
    return { ...c, usage: ctx.resumeFrom.fork ? { ...emptyUsage(), ...largest } : { ...c.usage } };
  }
  return {
    phaseIndex: 0,
    cycleIndex: 0,
    baseMessages: ctx.messages,
    injected: [],
    executed: [],
    duplicateStrikes: 0,
    toldInvalid: [],
    usage: emptyUsage(),
  };
}

/** A copy of the state to store at a pause point. */
export function checkpoint(s: TurnState): TwoStageCheckpoint {
  return {
    schemaVersion: TWO_STAGE_CHECKPOINT_VERSION,
    phaseIndex: s.phaseIndex,
    cycleIndex: s.cycleIndex,
    baseMessages: s.baseMessages,
    injected: [...s.injected],
    executed: [...s.executed],
    duplicateStrikes: s.duplicateStrikes,
    ...(s.lastStrike ? { lastStrike: s.lastStrike } : {}),
    toldInvalid: [...s.toldInvalid],
    usage: { ...s.usage },
    ...(s.promptGauge ? { promptGauge: { ...s.promptGauge } } : {}),
    ...(s.sources ? { sources: s.sources } : {}),
    ...(s.pendingApproval ? { pendingApproval: s.pendingApproval } : {}),
    ...(s.runningCall ? { runningCall: s.runningCall } : {}),
  };
}

export function counters(s: TurnState): TwoStageCounters {
  return { executedTools: s.executed.length, duplicateStrikes: s.duplicateStrikes, lastStrike: s.lastStrike };
}

export function done(s: TurnState, stopReason: StopReason): ProtocolEvent {
  // fullContent is what was streamed; the executor, which saw every chunk, fills it in
  return { type: 'done', fullContent: '', stopReason, usage: s.usage };
}
