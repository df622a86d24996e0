/**
 * The two-stage protocol's budgets as named predicates over what the turn recorded
 * (as docs/API.md describes them: one tool per tool phase, MAX_PHASE_CYCLES_PER_TURN executed tools,
 * MAX_DUPLICATE_ATTEMPTS refused duplicates, then one forced final answer).
 */
export interface TwoStageCounters {
  /** tools executed this turn (cycles) */
  executedTools: number;
  /** refused duplicates and repeated invalid calls */
  duplicateStrikes: number;
}

export interface TwoStageLimits {
  maxPhaseCycles: number;
  maxDuplicateAttempts: number;
}

export type ForcedReason = 'cycle_budget' | 'duplicate_limit';

export const cycleBudgetReached = (c: TwoStageCounters, l: TwoStageLimits): boolean => c.executedTools >= l.maxPhaseCycles;
export const duplicateLimitReached = (c: TwoStageCounters, l: TwoStageLimits): boolean => c.duplicateStrikes >= l.maxDuplicateAttempts;

/** Which budget (if any) forces the next action phase to be the final answer. */
export function forcedFinal(c: TwoStageCounters, l: TwoStageLimits): ForcedReason | null {
  if (duplicateLimitReached(c, l)) return 'duplicate_limit';
  if (cycleBudgetReached(c, l)) return 'cycle_budget';
  return null;
}

/** The two-stage protocol's own notices (the duplicate notices are the ToolCallGuard's, shared with unified). */
export const NOTICES = {
  cycleBudget: (n: number) => `Maximum tool execution cycles (${n}) reached; the model is asked for its final answer without tools.`,
  invalidArguments: (name: string) => `Tool call to ${name} was not run: its arguments are not a valid JSON object. The model was told why.`,
} as const;
