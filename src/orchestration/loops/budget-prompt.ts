import { cutUntrustedContent, omitUntrustedContent } from '../../common/util/untrusted-block';
import type { LlmMessage, LlmToolSpec } from '../../llm/llm-adapter.port';
import { estimateMessageTokens, estimatePromptTokens } from '../../llm/usage-estimate';
import type { TurnUsage } from '../protocol-event';
import { finalCallCap, finalPromptRoom, nextPromptTokens, toolCallCap, type PromptGauge } from './token-budget';

/** A shortened tool output keeps at least this much of its head. */
const MIN_KEPT_CHARS = 256;
/** passes of cutting before the request goes out as small as it got */
const MAX_PASSES = 4;

/** What the turn token budget made of a request (traced with its llm_request). */
export interface BudgetedCall {
  messages: LlmMessage[];
  maxTokens: number;
  /** the prompt as the budget counted it */
  promptTokens: number;
  /** tool output characters cut so that the final call's prompt fits */
  cutChars: number;
  /** the tokenizer's count of the prompt sent: with the provider's report, it measures the next one */
  gauge: PromptGauge;
  /** false: even with every tool output left out, the prompt does not fit what the budget leaves (the call is not to be made) */
  fits: boolean;
}

/** A call that may use tools, inside the budget; undefined when the turn must write its final answer instead. */
export function budgetToolCall(budget: number, usage: TurnUsage, last: PromptGauge | undefined, messages: LlmMessage[], tools: LlmToolSpec[] | undefined, cap: number): BudgetedCall | undefined {
  const estimated = estimatePromptTokens(messages, tools);
  const promptTokens = nextPromptTokens(estimated, usage.largestPromptTokens ?? 0, last);
  const maxTokens = toolCallCap(usage.totalTokens, promptTokens, cap, budget);
  if (maxTokens === undefined) return undefined;
  return { messages, maxTokens, promptTokens, cutChars: 0, gauge: { estimated }, fits: true };
}

/**
 * The forced final call: its tool outputs cut, oldest first and each from its end, until the
 * prompt fits what the budget leaves; should their heads still be too many (many calls in a
 * step), whole outputs are left out, oldest first, each for a line saying so. Its max_tokens is
 * what is left after that prompt. `fits` is false when even that is not enough (the system
 * prompt, history, user message and the model's own messages are never cut).
 */
export function budgetFinalCall(budget: number, usage: TurnUsage, last: PromptGauge | undefined, messages: LlmMessage[], cap: number): BudgetedCall {
  const room = finalPromptRoom(usage.totalTokens, budget);
  const measure = (m: LlmMessage[]) => {
    const estimated = estimatePromptTokens(m);
    return { estimated, prompt: nextPromptTokens(estimated, usage.largestPromptTokens ?? 0, last) };
  };
  let out = messages;
  let m = measure(out);
  let cutChars = 0;
  for (let pass = 0; pass < MAX_PASSES && m.prompt > room; pass++) {
    const cut = cutOldestFirst(out, m.prompt - room, m.prompt / Math.max(1, m.estimated));
    if (cut.removed === 0) break;
    out = cut.messages;
    cutChars += cut.removed;
    m = measure(out);
  }
  for (let i = 0; i < out.length && m.prompt > room; i++) {
    const text = cuttable(out[i], i) ? out[i].content : undefined;
    if (!text) continue;
    const omitted = omitUntrustedContent(text, (n) => `[This tool output (${n} characters) was left out to fit the turn's token budget.]`);
    if (omitted.removed === 0) continue;
    out = out.map((x, k) => (k === i ? { ...x, content: omitted.text } : x));
    cutChars += omitted.removed;
    m = measure(out);
  }
  return { messages: out, maxTokens: finalCallCap(usage.totalTokens, m.prompt, cap, budget), promptTokens: m.prompt, cutChars, gauge: { estimated: m.estimated }, fits: m.prompt <= room };
}

/** Cuts about `excessTokens` (provider tokens; `scale` per tokenizer token) from the tool outputs, oldest first. */
function cutOldestFirst(messages: LlmMessage[], excessTokens: number, scale: number): { messages: LlmMessage[]; removed: number } {
  let excess = excessTokens;
  let removed = 0;
  const out = messages.map((msg, i) => {
    const text = cuttable(msg, i) ? msg.content : undefined;
    if (excess <= 0 || !text) return msg;
    const tokens = estimateMessageTokens(msg) * scale;
    // characters per provider token in this output, and a little over, for the note the cut adds
    const chars = Math.ceil(((excess + 32) * text.length) / Math.max(1, tokens));
    const cut = cutUntrustedContent(text, chars, MIN_KEPT_CHARS, (n, total) => `[… ${n} of ${total} characters of this tool output were cut to fit the turn's token budget.]`);
    if (cut.removed === 0) return msg;
    excess -= (cut.removed * tokens) / text.length;
    removed += cut.removed;
    return { ...msg, content: cut.text };
  });
  return { messages: out, removed };
}

/** Only tool results are cut: not the user's or the model's messages, nor the system prompt (its custom instructions are the user's). */
function cuttable(m: LlmMessage, index: number): boolean {
  return index > 0 && (m.role === 'tool' || m.role === 'system');
}
