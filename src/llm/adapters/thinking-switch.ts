import type { ThinkingSwitch } from '../../config/env.schema';

/**
 * How to ask an OpenAI-compatible server for no reasoning on a request that decides tools.
 *
 * Chat Completions has no portable switch: each family reads its own field, and a field a server
 * does not know can make it answer 400. So a switch is sent only for a family named by
 * `LLM_THINKING_SWITCH`, or recognised from the model's name (`auto`); otherwise nothing.
 * - `qwen` (Qwen3-style chat templates on vLLM, SGLang, LM Studio, llama.cpp):
 *   `chat_template_kwargs: {enable_thinking: false}`
 * - `deepseek`: `thinking: {type: "disabled"}` (its hybrid models; `deepseek-chat` does not think)
 * - `openai` (o-series and gpt-5 reasoning models): `reasoning_effort` at its lowest
 *   (`minimal` for gpt-5, `low` for the o-series, which have no `minimal`)
 */
export type ThinkingFamily = Exclude<ThinkingSwitch, 'auto'>;

export function thinkingFamily(configured: ThinkingSwitch, model: string): ThinkingFamily {
  if (configured !== 'auto') return configured;
  const m = model.toLowerCase().split('/').at(-1) ?? '';
  if (/^(qwen3|qwq)/.test(m) || /(^|[-_:])qwen3/.test(m)) return 'qwen';
  if (m.startsWith('deepseek')) return 'deepseek';
  if (/^(o\d|gpt-5)/.test(m)) return 'openai';
  return 'none';
}

/** The body fields that turn reasoning off for this family and model (empty when there are none). */
export function thinkingOffFields(family: ThinkingFamily, model: string): Record<string, unknown> {
  switch (family) {
    case 'qwen':
      return { chat_template_kwargs: { enable_thinking: false } };
    case 'deepseek':
      return { thinking: { type: 'disabled' } };
    case 'openai':
      return { reasoning_effort: /gpt-5/i.test(model) ? 'minimal' : 'low' };
    case 'none':
      return {};
  }
}
