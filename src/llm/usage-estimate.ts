import { countTokens } from 'gpt-tokenizer';
import type { LlmMessage, LlmRequest, LlmToolSpec, LlmUsage } from './llm-adapter.port';

/** per message: the chat format's role and separator tokens (OpenAI's documented overhead) */
const MESSAGE_OVERHEAD = 4;
// text is counted as data: a message that contains "<|endoftext|>" is text, not a special token
const AS_TEXT = { disallowedSpecial: new Set<string>() };

const tokens = (text: string | null | undefined): number => (text ? countTokens(text, AS_TEXT) : 0);

/**
 * The usage of a call whose provider reported none (some streaming servers, a stream we cut at
 * its first complete call), counted with a BPE tokenizer (gpt-tokenizer: OpenAI's o200k
 * encoding, a maintained pure-JS package) and marked `estimated`. Other models' tokenizers
 * differ by some percent; the mark says so.
 */
export function estimateUsage(request: LlmRequest, completionText: string, callTexts: string[]): LlmUsage {
  const prompt = estimatePromptTokens(request.messages, request.tools);
  const completion = tokens(completionText) + callTexts.reduce((n, c) => n + tokens(c), 0);
  return { promptTokens: prompt, completionTokens: completion, totalTokens: prompt + completion, estimated: true };
}

/** A prompt's tokens as {@link estimateUsage} counts them: the turn token budget measures the next call with it. */
export function estimatePromptTokens(messages: LlmMessage[], tools?: LlmToolSpec[]): number {
  let prompt = 0;
  for (const m of messages) prompt += estimateMessageTokens(m);
  for (const t of tools ?? []) prompt += tokens(t.name) + tokens(t.description) + tokens(JSON.stringify(t.parameters ?? {}));
  return prompt;
}

/** One message's tokens, its role and separators included. */
export function estimateMessageTokens(m: LlmMessage): number {
  let n = MESSAGE_OVERHEAD + tokens(m.content);
  for (const c of m.toolCalls ?? []) n += tokens(c.name) + tokens(c.arguments);
  return n;
}
