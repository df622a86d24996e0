import type { LlmErrorInfo } from '../llm-adapter.port';
import type { RetryPolicy } from '../retry-policy';
import type { ThinkingFamily } from './thinking-switch';

/** What an HTTP adapter (OpenAI-compatible, Ollama) needs; the factory fills it from AppConfigService. */
export interface HttpAdapterOptions {
  /** e.g. `https://api.openai.com/v1`, `http://localhost:11434` */
  baseUrl: string;
  model: string;
  /** sent as a bearer token; never logged, never in an error message */
  apiKey?: string;
  /** LLM_TIMEOUT_MS: one whole request, retries and back-off included */
  timeoutMs: number;
  /** LLM_IDLE_TIMEOUT_MS: longest wait for the next streamed chunk */
  idleTimeoutMs: number;
  /** LLM_MAX_LINE_LENGTH: longest stream line (characters) before the stream fails */
  maxLineLength?: number;
  /** LLM_CONTEXT_WINDOW */
  contextWindow: number;
  /** LLM_TOOL_CALLING (OpenAI-compatible; Ollama asks /api/show and falls back to this) */
  toolCalling?: boolean;
  /** LLM_THINKING_SWITCH resolved for this model: how a tool decision asks for no reasoning */
  thinking?: ThinkingFamily;
  /** LLM_THINKING=on: never ask for no reasoning */
  thinkingOn?: boolean;
  /** LLM_EXTRA_BODY: server-specific fields merged into every request body */
  extraBody?: Record<string, unknown>;
  /** overrides of the pre-first-byte retry policy (tests shorten the back-off) */
  retry?: Partial<RetryPolicy>;
  /** told of each retry (metrics) */
  onRetry?: (failure: LlmErrorInfo) => void;
}
