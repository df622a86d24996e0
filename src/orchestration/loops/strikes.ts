import type { StopReason } from '../protocol-event';

/** What spent a strike: the stop reason names the kind of the strike that spent the budget. */
export type StrikeKind = 'repeat' | 'no_progress' | 'invalid';

/** The loop-strike counter a protocol keeps in its turn state (two-stage: in its checkpoint). */
export interface Strikes {
  duplicateStrikes: number;
  /** the latest strike's kind; absent before any (and in older checkpoints: a repeat) */
  lastStrike?: StrikeKind;
}

/** The stop reason a spent strike budget gives, by the kind of the strike that spent it (both protocols). */
export function strikeStopReason(lastStrike: StrikeKind | undefined): Extract<StopReason, 'duplicate_limit' | 'no_progress'> {
  return lastStrike === 'no_progress' ? 'no_progress' : 'duplicate_limit';
}

/** Whether `strikes` spend a budget of `limit`: the one place the loop-strike limit is computed. */
export function strikesSpent(strikes: number, limit: number): boolean {
  return strikes >= limit;
}
