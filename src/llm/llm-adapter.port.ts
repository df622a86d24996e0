/**
 * The LLM port: every protocol talks to a model only through this interface, so the same
 * orchestration code runs against OpenAI-compatible servers, Ollama, the replay provider and
 * the scripted adapters of the tests.
 */

export type LlmRole = 'system' | 'user' | 'assistant' | 'tool';

/** One tool call as the model issued it; `arguments` is the raw JSON string. */
export interface LlmToolCall {
  id: string;
  name: string;
  arguments: string;
}

/** A chat message in OpenAI terms (camelCase); adapters translate to their wire format. */
export interface LlmMessage {
  role: LlmRole;
  content: string | null;
  /** assistant messages that called tools */
  toolCalls?: LlmToolCall[];
  /** tool messages: the call they answer */
  toolCallId?: string;
  /** tool messages: the tool's name (Ollama wants it) */
  name?: string;
}

/** A tool offered to the model (JSON-Schema parameters). */
export interface LlmToolSpec {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}

export interface LlmRequest {
  messages: LlmMessage[];
  tools?: LlmToolSpec[];
  /** `none` forbids tool calls (forced final answers); omitted = provider default (`auto`). */
  toolChoice?: 'auto' | 'none' | 'required';
  temperature?: number;
  maxTokens?: number;
  /** Correlates provider logs and traces; sent as a header where the provider allows. */
  requestId?: string;
  /** Ask the provider to skip thinking/reasoning where it has a switch for it. */
  disableReasoning?: boolean;
}

export interface LlmUsage {
  promptTokens: number;
  completionTokens: number;
  totalTokens: number;
  /** of completionTokens, spent on reasoning (OpenAI's completion_tokens_details.reasoning_tokens), where reported */
  reasoningTokens?: number;
  /** of promptTokens, read from the provider's prompt cache (prompt_tokens_details.cached_tokens), where reported */
  cachedTokens?: number;
  /** true when the provider reported no usage and the counts are a tokenizer's estimate */
  estimated?: boolean;
}

/**
 * Deltas a provider sent for its choice after that choice's finish_reason, by kind. They are
 * not part of the response: never streamed, stored or run (a tool call after
 * `finish_reason: "stop"` is a malformed stream, not a decision of the model).
 */
export interface LateDeltas {
  text: number;
  reasoning: number;
  toolCalls: number;
}

/** Normalized finish reasons; `rawReason` keeps what the provider said. */
export type LlmFinishReason = 'stop' | 'tool_calls' | 'length' | 'content_filter' | 'error' | 'other';

export type LlmErrorCode =
  | 'aborted' // the caller's AbortSignal fired
  | 'timeout' // LLM_TIMEOUT_MS elapsed
  | 'idle_timeout' // no chunk for LLM_IDLE_TIMEOUT_MS
  | 'rate_limited' // 429 after retries
  | 'auth' // 401/403
  | 'bad_request' // other 4xx
  | 'server_error' // 5xx after retries
  | 'network' // connection refused/reset
  | 'provider_error' // an error object inside the stream
  | 'invalid_response'; // unparseable stream

export interface LlmErrorInfo {
  code: LlmErrorCode;
  message: string;
  retryable: boolean;
  status?: number;
}

/** The normalized stream. An adapter never throws from iteration: failures end the stream with one `error` event. */
export type LlmStreamEvent =
  | { type: 'text-delta'; text: string }
  /** thinking/reasoning text: kept apart from the answer, never shown as answer text */
  | { type: 'reasoning-delta'; text: string }
  /** a fragment of tool call `index`; `id`/`name` appear when the provider sends them (usually in the first fragment) */
  | { type: 'tool-call-delta'; index: number; id?: string; name?: string; argumentsFragment: string }
  /** `ignoredAfterFinish`: what the adapter dropped because it came after the finish_reason (absent: nothing) */
  | { type: 'finish'; reason: LlmFinishReason; rawReason?: string; usage?: LlmUsage; ignoredAfterFinish?: LateDeltas }
  | { type: 'error'; error: LlmErrorInfo };

/** A non-streaming answer (`complete()`), tool calls already merged. */
export interface LlmCompletion {
  content: string;
  reasoning?: string;
  toolCalls: LlmToolCall[];
  finishReason: LlmFinishReason;
  rawFinishReason?: string;
  usage?: LlmUsage;
}

export interface LlmCapabilities {
  provider: string;
  model: string;
  toolCalling: boolean;
  contextWindow: number;
  /** true for the replay provider: every reply is a recording */
  replay: boolean;
}

export interface LlmAdapter {
  readonly provider: string;
  readonly model: string;
  /** Streams one model response; aborting `signal` ends it promptly with an `error{code:'aborted'}` event. */
  stream(request: LlmRequest, signal?: AbortSignal): AsyncIterable<LlmStreamEvent>;
  /** One non-streaming response; rejects with `LlmError` on failure. */
  complete(request: LlmRequest, signal?: AbortSignal): Promise<LlmCompletion>;
  capabilities(): Promise<LlmCapabilities>;
}

/** Thrown by `complete()` (streams report the same information as an `error` event). */
export class LlmError extends Error {
  constructor(readonly info: LlmErrorInfo) {
    super(info.message);
    this.name = 'LlmError';
  }
}

/** Nest injection token of the configured adapter. */
export const LLM_ADAPTER = Symbol('LLM_ADAPTER');
