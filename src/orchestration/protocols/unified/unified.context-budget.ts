import { UNTRUSTED_BLOCK_OVERHEAD_CHARS, untrustedBlock } from '../../../common/util/untrusted-block';
import type { LlmMessage, LlmToolSpec } from '../../../llm/llm-adapter.port';
import { CHARS_PER_TOKEN, contextBudget, estimateTokens, trimHistory, type ContextBudget } from '../../context-budget';
import { MAX_RESPONSE_TOKENS } from '../prompts';

/**
 * The unified route's context budget (issue #5, item 2), over the split in
 * `context-budget.ts`: 12% system prompt, 18% history, 18% user prompt, 50% response.
 *
 * - the system prompt is built to fit its share (only its optional lists shrink, see
 *   `unified.prompt.ts`);
 * - history is trimmed to its share, oldest turn first;
 * - the user prompt is never cut (the DTO already bounds it at 32,000 characters);
 * - the messages of the tool steps (assistant calls and tool results) take whatever the
 *   request has left once the response share is kept free; when they would overflow it, the
 *   OLDEST tool outputs are shortened first, each keeping its head and saying it was cut.
 *   The full outputs stay in the turn's state, so every model call recomputes the cut from
 *   the originals (the newest results are always the last to lose anything).
 *
 * Token counts use the 4-characters-per-token estimate; each message also costs
 * {@link MESSAGE_OVERHEAD_TOKENS} (role and separators).
 */

/** Context window assumed when neither the request context nor the adapter gives one. */
export const DEFAULT_CONTEXT_WINDOW = 8_192;
/** Tokens a message costs beyond its text (role, separators): the figure trimHistory uses. */
export const MESSAGE_OVERHEAD_TOKENS = 4;
/** A shortened tool output keeps at least this many characters of its head. */
export const MIN_TOOL_OUTPUT_HEAD_CHARS = 256;

export interface UnifiedBudget extends ContextBudget {
  window: number;
  /** max_tokens of every model call: the response share, capped at MAX_RESPONSE_TOKENS */
  maxResponseTokens: number;
}

export function unifiedBudget(window: number | undefined): UnifiedBudget {
  const w = window && Number.isFinite(window) && window > 0 ? Math.floor(window) : DEFAULT_CONTEXT_WINDOW;
  const b = contextBudget(w);
  return { ...b, window: w, maxResponseTokens: Math.max(1, Math.min(MAX_RESPONSE_TOKENS, b.responseTokens)) };
}

/** The new user message (never cut) and the history before it (trimmed to its share). */
export function splitConversation(messages: LlmMessage[], budget: UnifiedBudget): { history: LlmMessage[]; user: LlmMessage | undefined } {
  const last = messages[messages.length - 1];
  const user = last?.role === 'user' ? last : undefined;
  const before = user ? messages.slice(0, -1) : messages;
  return { history: trimHistory(before, budget.historyTokens), user };
}

/** One tool step as the model will see it: its assistant message and one tool message per call, in call order. */
export interface StepMessages {
  assistant: LlmMessage;
  tools: LlmMessage[];
}

export interface AssembleInput {
  system: string;
  history: LlmMessage[];
  user: LlmMessage | undefined;
  steps: StepMessages[];
  specs: LlmToolSpec[];
  budget: UnifiedBudget;
}

/** What {@link assembleMessages} did to fit the window (traced with each llm_request). */
export interface AssembleReport {
  estimatedPromptTokens: number;
  shortenedToolOutputs: number;
  removedToolChars: number;
}

/** System prompt, history, user message, then every step's assistant and tool messages, inside the window. */
export function assembleMessages(input: AssembleInput): { messages: LlmMessage[]; report: AssembleReport } {
  const cost = (m: LlmMessage) =>
    estimateTokens(m.content) + MESSAGE_OVERHEAD_TOKENS + (m.toolCalls ?? []).reduce((n, c) => n + estimateTokens(c.name) + estimateTokens(c.arguments), 0);
  const head: LlmMessage[] = [{ role: 'system', content: input.system }, ...input.history, ...(input.user ? [input.user] : [])];
  const fixed =
    head.reduce((n, m) => n + cost(m), 0) +
    input.steps.reduce((n, s) => n + cost({ ...s.assistant }), 0) +
    (input.specs.length ? estimateTokens(JSON.stringify(input.specs)) : 0);
  const toolMessages = input.steps.flatMap((s) => s.tools);
  // every tool message reaches the model inside the untrusted-output block, shortened inside it
  const blocks = toolMessages.length * Math.ceil(UNTRUSTED_BLOCK_OVERHEAD_CHARS / CHARS_PER_TOKEN);
  const room = input.budget.window - input.budget.responseTokens - fixed - blocks;
  const fitted = shortenOldestFirst(toolMessages, room);
  let i = 0;
  const messages = [...head];
  for (const s of input.steps) {
    messages.push(s.assistant);
    for (let k = 0; k < s.tools.length; k++) {
      const m = fitted.messages[i++];
      messages.push({ ...m, content: untrustedBlock(m.name ?? 'tool', m.content ?? '') });
    }
  }
  const toolTokens = fitted.messages.reduce((n, m) => n + cost(m), 0) + blocks;
  return {
    messages,
    report: { estimatedPromptTokens: fixed + toolTokens, shortenedToolOutputs: fitted.shortened, removedToolChars: fitted.removedChars },
  };
}

/**
 * Shortens tool messages, oldest first, until their estimated tokens fit `roomTokens`. Each
 * shortened output keeps at least MIN_TOOL_OUTPUT_HEAD_CHARS of its head and ends with a note
 * saying how much was cut. Messages are copied, never mutated. When even the heads do not fit,
 * the request goes out as small as this can make it (the provider then reports the overflow).
 */
export function shortenOldestFirst(messages: LlmMessage[], roomTokens: number): { messages: LlmMessage[]; shortened: number; removedChars: number } {
  const total = messages.reduce((n, m) => n + estimateTokens(m.content) + MESSAGE_OVERHEAD_TOKENS, 0);
  let excessChars = (total - Math.max(0, roomTokens)) * CHARS_PER_TOKEN;
  if (excessChars <= 0) return { messages, shortened: 0, removedChars: 0 };
  let shortened = 0;
  let removedChars = 0;
  const out = messages.map((m) => {
    const content = m.content ?? '';
    if (excessChars <= 0) return m;
    const note = (removed: number) =>
      `\n[… ${removed} of ${content.length} characters of this tool output were cut to fit the context window; call the tool with narrower arguments if you need them.]`;
    const noteChars = note(content.length).length;
    const removable = content.length - MIN_TOOL_OUTPUT_HEAD_CHARS;
    if (removable <= noteChars) return m; // cutting would save nothing
    const removed = Math.min(removable, excessChars + noteChars);
    excessChars -= removed - noteChars;
    shortened += 1;
    removedChars += removed;
    return { ...m, content: content.slice(0, content.length - removed) + note(removed) };
  });
  return { messages: out, shortened, removedChars };
}
