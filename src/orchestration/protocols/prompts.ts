import type { ChatMode } from '../protocol-strategy';

/** Sampling temperature per mode (docs/API.md: plan 0.7, act 0.3). */
export function temperatureFor(mode: ChatMode): number {
  return mode === 'plan' ? 0.7 : 0.3;
}

/** Upper bound of one response, as the contract sets it (docs/API.md). */
export const MAX_RESPONSE_TOKENS = 8192;

/**
 * The unified route's role (issue #5), shared by its agentic and direct paths. Never cut by the
 * context budget; the tool guidance (or the retrieved excerpts), the knowledge modules and the
 * conversation's custom instructions are added per turn by `unified/unified.prompt.ts`.
 */
export const UNIFIED_SYSTEM_PROMPT = [
  'You are Orion, an assistant inside a chat product.',
  'Answer the user directly and concisely when you can. Use Markdown when it helps readability.',
  'Never invent facts about the user\'s project: say so when you do not know.',
].join('\n');

/**
 * How the tool-free call after a content loop streams (ModelStream options): should it loop too,
 * one copy of the passage reaches the client; its text runs 600 characters behind the model so
 * the detector can find a repetition (periods up to about 150 characters) before a second copy streams.
 */
export const AFTER_LOOP = { loopShown: 1, loopLag: 600 } as const;

/** Streamed between the answer text of two model steps of one turn, so they never run together. */
export const PARAGRAPH_BREAK = '\n\n';

/** What the user reads when the turn token budget cannot hold even the final answer's prompt (no model call is made). */
export function budgetSpentText(promptTokens: number, leftTokens: number): string {
  return `No answer was written: this turn's token budget has ${Math.max(0, leftTokens)} tokens left, and the shortest request for an answer is ${promptTokens} tokens. Ask again with a larger turn token budget (options.turnTokenBudget on the chat routes, else the server's TURN_TOKEN_BUDGET), or with a shorter message, or in a new conversation.`;
}
