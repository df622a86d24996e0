/**
 * The turn's token budget (TURN_TOKEN_BUDGET, options.turnTokenBudget; docs/API.md, Loops), as
 * numbers. A call that may use tools goes out only when the budget holds its worst case — its
 * prompt, as measured before it is sent, plus its `max_tokens` — and still leaves room for the
 * forced final answer after it: the same prompt again, what this call writes (its text and call
 * arguments join the next prompt), and FINAL_ANSWER_RESERVE. Its `max_tokens` is cut to fit that.
 * Otherwise the turn goes to the final answer, whose prompt is cut to what the budget leaves
 * (budget-prompt.ts) and whose `max_tokens` is what is left after it; a final prompt that cannot
 * be cut that far is not sent. So a turn's usage never passes the budget by more than that final
 * call's `max_tokens`.
 */
export const MIN_FINAL_TOKENS = 64;
/** a call that may use tools gets at least this many tokens to write its call, or is not made */
export const MIN_TOOL_CALL_TOKENS = 256;
/** what a call that may use tools leaves for the final answer's own text */
export const FINAL_ANSWER_RESERVE = 512;

/** the most a provider's count of a prompt is taken to exceed the tokenizer's (a larger report is read as this) */
export const MAX_PROVIDER_RATIO = 4;

/** The turn's last prompt: as the tokenizer counted it before sending, and as the provider reported it. */
export interface PromptGauge {
  estimated: number;
  reported?: number;
}

/** After a call: the provider's count of the prompt the gauge measured (an estimate when it reported none). */
export function notePrompt(gauge: PromptGauge | undefined, usage: { promptTokens: number } | undefined): void {
  if (gauge && usage && usage.promptTokens > 0) gauge.reported = usage.promptTokens;
}

/**
 * The next prompt's tokens as the provider will count them, from the tokenizer's `estimate` of
 * it. After a call whose prompt the provider reported, that figure is the base and the growth
 * since is the tokenizer's; a provider that counts more per text than the tokenizer (another
 * encoding) scales the estimate too, by at most MAX_PROVIDER_RATIO. Without one (the turn's first call, a run
 * continued from a checkpoint) the estimate, and never less than the largest prompt seen.
 */
export function nextPromptTokens(estimate: number, largestPrompt: number, last?: PromptGauge): number {
  if (!last || !(last.estimated > 0) || last.reported === undefined || !(last.reported > 0)) return Math.max(estimate, largestPrompt);
  const ratio = Math.min(MAX_PROVIDER_RATIO, Math.max(1, last.reported / last.estimated));
  return Math.ceil(Math.max(estimate * ratio, last.reported + estimate - last.estimated));
}

/** The `max_tokens` of a call that may use tools, or undefined when the turn must write its final answer now. */
export function toolCallCap(usedTokens: number, prompt: number, cap: number, budget: number | undefined): number | undefined {
  if (!budget) return cap;
  // what the call writes counts twice: as its completion, and again in the final call's prompt
  const left = Math.floor((budget - usedTokens - 2 * prompt - FINAL_ANSWER_RESERVE) / 2);
  if (left < Math.min(cap, MIN_TOOL_CALL_TOKENS)) return undefined;
  return Math.min(cap, left);
}

/** The largest prompt the final call may send: what the budget leaves once MIN_FINAL_TOKENS of answer are kept. */
export function finalPromptRoom(usedTokens: number, budget: number): number {
  return budget - usedTokens - MIN_FINAL_TOKENS;
}

/** The forced final call's max_tokens: what the budget leaves after the prompt, never below MIN_FINAL_TOKENS nor above `cap`. */
export function finalCallCap(usedTokens: number, prompt: number, cap: number, budget: number | undefined): number {
  if (!budget) return cap;
  return Math.min(cap, Math.max(MIN_FINAL_TOKENS, budget - usedTokens - prompt));
}

/** A checkpoint's stored gauge, so a run continued from it (resumed, forked, taken over) measures its next prompt as the run before it did; undefined when absent or malformed. */
export function parsePromptGauge(raw: unknown): PromptGauge | undefined {
  if (typeof raw !== 'object' || raw === null) return undefined;
  const g = raw as { estimated?: unknown; reported?: unknown };
  if (typeof g.estimated !== 'number' || !(g.estimated > 0)) return undefined;
  return { estimated: g.estimated, ...(typeof g.reported === 'number' && g.reported > 0 ? { reported: g.reported } : {}) };
}
