import { strikeStopReason, strikesSpent, type StrikeKind } from '../../loops/strikes';

/**
 * The two-stage protocol's loop budgets as named predicates over what the turn recorded
 * (as docs/API.md describes them: one tool per tool phase, MAX_PHASE_CYCLES_PER_TURN executed tools,
 * MAX_DUPLICATE_ATTEMPTS loop strikes, then one forced final answer; a content loop gets one
 * tool-free call). The strike limit itself is the ToolCallGuard's `strikesSpent`.
 */
export interface TwoStageCounters {
  /** tools executed this turn (cycles) */
  executedTools: number;
  /** loop strikes: refused duplicates, repeated results, calls that learned nothing new, repeated invalid calls */
  duplicateStrikes: number;
  /** the kind of the latest strike: the stop reason names what spent the budget */
  lastStrike?: StrikeKind;
}

export interface TwoStageLimits {
  maxPhaseCycles: number;
  maxDuplicateAttempts: number;
}

/** Why the next action phase is a tool-free final answer (its `stopReason`). */
export type ForcedReason = 'cycle_budget' | 'duplicate_limit' | 'no_progress' | 'content_loop' | 'token_budget';

export const cycleBudgetReached = (c: TwoStageCounters, l: TwoStageLimits): boolean => c.executedTools >= l.maxPhaseCycles;

/** Which budget (if any) forces the next action phase to be the final answer. */
export function forcedFinal(c: TwoStageCounters, l: TwoStageLimits): ForcedReason | null {
  if (strikesSpent(c.duplicateStrikes, l.maxDuplicateAttempts)) return strikeStopReason(c.lastStrike);
  if (cycleBudgetReached(c, l)) return 'cycle_budget';
  return null;
}

/** The two-stage protocol's own notices (the duplicate notices are the ToolCallGuard's, shared with unified). */
export const NOTICES = {
  cycleBudget: (n: number) => `Maximum tool execution cycles (${n}) reached; the model is asked for its final answer without tools.`,
  invalidArguments: (name: string) => `Tool call to ${name} was not run: its arguments are not a valid JSON object. The model was told why.`,
} as const;
