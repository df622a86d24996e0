/**
 * The turn's token budget (TURN_TOKEN_BUDGET, options.turnTokenBudget; docs/API.md, Loops).
 * A model call is allowed while what the turn used plus that call's worst case stays inside the
 * budget; the worst case is the largest prompt seen so far (the next prompt holds it) plus the
 * call's `max_tokens`. Otherwise the turn goes to the forced final answer, whose `max_tokens` is
 * what is left. The first call has no prompt seen yet, so only its cap counts.
 */
export const MIN_FINAL_TOKENS = 64;

/** true when the next call, with `cap` as its max_tokens, could cross `budget`. */
export function tokenBudgetReached(usedTokens: number, largestPrompt: number, cap: number, budget: number | undefined): boolean {
  if (!budget) return false;
  return usedTokens + largestPrompt + cap > budget;
}

/** The forced final call's max_tokens: what the budget leaves after the prompt, never below MIN_FINAL_TOKENS nor above `cap`. */
export function finalCallCap(usedTokens: number, largestPrompt: number, cap: number, budget: number | undefined): number {
  if (!budget) return cap;
  return Math.min(cap, Math.max(MIN_FINAL_TOKENS, budget - usedTokens - largestPrompt));
}
