import { LlmError } from '../llm-adapter.port';

/**
 * Longest line (in characters) a model stream may send before the decoder gives up: 8 MiB by
 * default (`LLM_MAX_LINE_LENGTH`). Without a bound a server that never sends a line break would
 * make Orion buffer until memory runs out.
 */
export const DEFAULT_MAX_LINE_LENGTH = 8 * 1024 * 1024;

/** The stream broke the bound: reported as `invalid_response`, never retried. */
export function lineTooLong(maxLength: number, what: string): LlmError {
  return new LlmError({
    code: 'invalid_response',
    message: `the model stream sent ${what} longer than ${maxLength} characters (LLM_MAX_LINE_LENGTH)`,
    retryable: false,
  });
}
