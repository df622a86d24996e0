import { countTokens } from 'gpt-tokenizer';
import type { LlmRequest, LlmUsage } from './llm-adapter.port';

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
  let prompt = 0;
  for (const m of request.messages) {
    prompt += MESSAGE_OVERHEAD + tokens(m.content);
    for (const c of m.toolCalls ?? []) prompt += tokens(c.name) + tokens(c.arguments);
  }
  for (const t of request.tools ?? []) prompt += tokens(t.name) + tokens(t.description) + tokens(JSON.stringify(t.parameters ?? {}));
  const completion = tokens(completionText) + callTexts.reduce((n, c) => n + tokens(c), 0);
  return { promptTokens: prompt, completionTokens: completion, totalTokens: prompt + completion, estimated: true };
}
