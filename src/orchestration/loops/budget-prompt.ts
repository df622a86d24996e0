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
  // every pass cuts the original outputs anew (more each time), so an output carries one note, never a stack of them
  const cuts = messages.map(() => 0);
  const omitted = new Set<number>();
  const render = () => messages.map((msg, i) => (cuts[i] === 0 && !omitted.has(i) ? msg : { ...msg, content: shortened(msg.content ?? '', cuts[i], omitted.has(i)) }));
  let out = messages;
  let m = measure(out);
  for (let pass = 0; pass < MAX_PASSES && m.prompt > room; pass++) {
    // provider tokens per character of the prompt, and a note's worth of slack per output cut
    const scale = m.prompt / Math.max(1, m.estimated);
    let excess = m.prompt - room;
    let grew = false;
    for (let i = 0; i < messages.length && excess > 0; i++) {
      const text = cuttable(messages[i], i) ? messages[i].content : undefined;
      if (!text) continue;
      const available = cutUntrustedContent(text, Infinity, MIN_KEPT_CHARS, cutNote).removed - cuts[i];
      if (available <= 0) continue;
      const perChar = (estimateMessageTokens(messages[i]) * scale) / text.length;
      const take = Math.min(available, Math.ceil((excess + NOTE_TOKENS * scale) / perChar));
      cuts[i] += take;
      excess -= take * perChar;
      grew = true;
    }
    if (!grew) break;
    out = render();
    m = measure(out);
  }
  // their heads are still too many (many calls in a step): whole outputs go, oldest first
  for (let i = 0; i < messages.length && m.prompt > room; i++) {
    const text = cuttable(messages[i], i) ? messages[i].content : undefined;
    if (!text || omitUntrustedContent(text, omitNote).removed === 0) continue;
    omitted.add(i);
    out = render();
    m = measure(out);
  }
  const cutChars = messages.reduce((n, msg, i) => n + ((msg.content ?? '').length - (out[i].content ?? '').length), 0);
  return { messages: out, maxTokens: finalCallCap(usage.totalTokens, m.prompt, cap, budget), promptTokens: m.prompt, cutChars: Math.max(0, cutChars), gauge: { estimated: m.estimated }, fits: m.prompt <= room };
}

/** about what a cut's note costs, in tokenizer tokens */
const NOTE_TOKENS = 40;
const cutNote = (n: number, total: number) => `[… ${n} of ${total} characters of this tool output were cut to fit the turn's token budget.]`;
const omitNote = (n: number) => `[This tool output (${n} characters) was left out to fit the turn's token budget.]`;

/** One original output, `chars` cut from its end, or left out whole. */
function shortened(text: string, chars: number, omit: boolean): string {
  if (omit) return omitUntrustedContent(text, omitNote).text;
  return cutUntrustedContent(text, chars, MIN_KEPT_CHARS, cutNote).text;
}

/** Only tool results are cut: not the user's or the model's messages, nor the system prompt (its custom instructions are the user's). */
function cuttable(m: LlmMessage, index: number): boolean {
  return index > 0 && (m.role === 'tool' || m.role === 'system');
}
