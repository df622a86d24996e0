import type { ChatMode } from '../protocol-strategy';

/** Sampling temperature per mode (API.md: plan 0.7, act 0.3). */
export function temperatureFor(mode: ChatMode): number {
  return mode === 'plan' ? 0.7 : 0.3;
}

/** Upper bound of one response, as the seeds decided. */
export const MAX_RESPONSE_TOKENS = 8192;

export const UNIFIED_SYSTEM_PROMPT = [
  'You are Orion, an assistant inside a chat product.',
  'Answer the user directly and concisely. Use Markdown when it helps readability.',
].join('\n');
