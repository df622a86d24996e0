import type { TurnBudgets } from '../../protocol-strategy';

/**
 * The unified route's loop budgets (docs/API.md, Loops): `maxIterations` model calls, then the
 * last response's calls are not run; `maxDuplicateAttempts` loop strikes (the ToolCallGuard's:
 * refused repeats, repeated results, calls that learned nothing new: `ToolCallGuard.spent`); a
 * content loop (`ToolCallGuard.contentLoop`). Each ends
 * the loop with one tool-free call that writes the answer, whose `stopReason` is the reason.
 */
export type FinalReason = 'max_iterations' | 'duplicate_limit' | 'no_progress' | 'content_loop' | 'token_budget';

/** A response that still calls tools after this many model calls is the loop's last: its calls are not run. */
export const iterationsSpent = (modelSteps: number, b: Pick<TurnBudgets, 'maxIterations'>): boolean => modelSteps >= b.maxIterations;
