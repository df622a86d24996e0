import type { LlmMessage } from '../llm/llm-adapter.port';

/**
 * The context window split (docs/ARCHITECTURE.md "Context budget"): 12% system prompt, 18% history,
 * 18% user prompt, 50% response (2% slack). Token counts are estimated at 4 characters per
 * token, which over-counts code and under-counts CJK text; good enough to keep requests
 * inside the window without a tokenizer per provider.
 */
export const CONTEXT_SHARES = { system: 0.12, history: 0.18, prompt: 0.18, response: 0.5 } as const;
export const CHARS_PER_TOKEN = 4;

export interface ContextBudget {
  systemTokens: number;
  historyTokens: number;
  promptTokens: number;
  responseTokens: number;
}

export function contextBudget(contextWindow: number): ContextBudget {
  return {
    systemTokens: Math.floor(contextWindow * CONTEXT_SHARES.system),
    historyTokens: Math.floor(contextWindow * CONTEXT_SHARES.history),
    promptTokens: Math.floor(contextWindow * CONTEXT_SHARES.prompt),
    responseTokens: Math.floor(contextWindow * CONTEXT_SHARES.response),
  };
}

export function estimateTokens(text: string | null | undefined): number {
  return text ? Math.ceil(text.length / CHARS_PER_TOKEN) : 0;
}

/**
 * Keeps the newest history that fits `maxTokens`, dropping whole turns oldest first (a turn
 * starts at a user message), so the model never sees an answer without its question.
 */
export function trimHistory(history: LlmMessage[], maxTokens: number): LlmMessage[] {
  const turns: LlmMessage[][] = [];
  for (const m of history) {
    if (m.role === 'user' || turns.length === 0) turns.push([m]);
    else turns[turns.length - 1].push(m);
  }
  const kept: LlmMessage[][] = [];
  let used = 0;
  for (let i = turns.length - 1; i >= 0; i--) {
    const cost = turns[i].reduce((n, m) => n + estimateTokens(m.content) + 4, 0);
    if (used + cost > maxTokens) break;
    kept.unshift(turns[i]);
    used += cost;
  }
  return kept.flat();
}
