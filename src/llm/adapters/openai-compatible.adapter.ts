import { Logger } from '@nestjs/common';
import OpenAI, { APIError } from 'openai';
import type {
  LlmAdapter,
  LlmCapabilities,
  LlmCompletion,
  LlmErrorInfo,
  LlmRequest,
  LlmStreamEvent,
  LlmToolCall,
} from '../llm-adapter.port';
import { LlmError } from '../llm-adapter.port';
import { completionToEvents } from '../collect-completion';
import { normalizeFinishReason } from '../finish-reason';
import { redactInfo, toLlmErrorInfo } from '../llm-error.util';
import { RequestGuard } from '../request-guard';
import { classifyNetworkError, classifyStatus, DEFAULT_RETRY_POLICY, withRetry, type AttemptFailure, type RetryPolicy } from '../retry-policy';
import { bodyOf, modelFetch } from '../wire/model-fetch';
import { readBody } from '../wire/read-body';
import { SseDecoder } from '../wire/sse-decoder';
import type { HttpAdapterOptions } from './http-adapter.options';
import { OpenAiChunkMapper, providerErrorInfo, readOpenAiUsage } from './openai-chunk.mapper';
import { buildChatCompletionBody } from './openai-request.mapper';

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => !!v && typeof v === 'object' && !Array.isArray(v);

/**
 * Any OpenAI-compatible Chat Completions server (OpenAI, DeepSeek, vLLM, llama.cpp, LM Studio,
 * Ollama /v1, Groq, OpenRouter…) through the official `openai` SDK.
 *
 * The SDK builds and sends the request (auth, headers, base URL) with its own retries switched
 * off; the body is read here, as raw SSE, because the SDK's stream throws away what matters to
 * us: it turns OpenRouter's inline error chunk into an exception (losing the chunk's content)
 * and ends silently on abort. Reading it ourselves also lets one RequestGuard apply the idle and
 * overall timeouts and the caller's signal to every byte. Retries follow {@link withRetry}:
 * before the first byte only.
 */
export class OpenAiCompatibleAdapter implements LlmAdapter {
  readonly provider = 'openai';
  readonly model: string;
  private readonly client: OpenAI;
  private readonly policy: RetryPolicy;
  private readonly logger = new Logger(OpenAiCompatibleAdapter.name);

  constructor(private readonly options: HttpAdapterOptions) {
    this.model = options.model;
    this.policy = { ...DEFAULT_RETRY_POLICY, ...options.retry };
    this.client = new OpenAI({
      // Local servers (llama.cpp, vLLM, LM Studio) need no key: send no Authorization at all
      // rather than a made-up one some of them would reject.
      apiKey: options.apiKey || 'no-key',
      ...(options.apiKey ? {} : { defaultHeaders: { Authorization: null } }),
      baseURL: options.baseUrl,
      maxRetries: 0,
      // Our RequestGuard owns the timeout; the SDK's only has to never fire first.
      timeout: options.timeoutMs + 5_000,
      // undici's request API under the SDK instead of the global fetch (see modelFetch)
      fetch: modelFetch(),
    });
  }

  /** Streams one response; see the class comment for the error and retry policy. Never throws. */
  async *stream(request: LlmRequest, signal?: AbortSignal): AsyncGenerator<LlmStreamEvent> {
    const guard = new RequestGuard({ signal, timeoutMs: this.options.timeoutMs, idleTimeoutMs: this.options.idleTimeoutMs });
    try {
      if (guard.cause) {
        yield { type: 'error', error: guard.errorInfo()! };
        return;
      }
      let response: Response;
      try {
        response = await this.send(buildChatCompletionBody(request, this.model, true, this.options), request, guard);
      } catch (err) {
        yield { type: 'error', error: this.describe(err, guard) };
        return;
      }
      if (/application\/json/i.test(response.headers.get('content-type') ?? '')) {
        // A server that ignored `stream: true` and answered in one piece.
        try {
          const body: unknown = await Promise.race([response.json(), guard.fired]);
          for (const event of completionToEvents(this.toCompletion(body))) yield event;
        } catch (err) {
          yield { type: 'error', error: this.describe(err, guard) };
        }
        return;
      }
      const sse = new SseDecoder(this.options.maxLineLength);
      const mapper = new OpenAiChunkMapper();
      try {
        for await (const bytes of readBody(bodyOf(response), guard)) {
          for (const msg of sse.push(bytes)) {
            // One network chunk can hold many messages: stop between them once aborted.
            if (guard.cause) throw guard.signal.reason;
            for (const event of mapper.mapMessage(msg)) yield this.redactEvent(event);
            if (mapper.ended) break;
          }
          if (mapper.ended) break;
        }
        if (!mapper.ended) for (const msg of sse.end()) for (const event of mapper.mapMessage(msg)) yield this.redactEvent(event);
      } catch (err) {
        // After the first byte: report, never retry (events may already be with the user).
        yield { type: 'error', error: this.describe(err, guard) };
        return;
      }
      for (const event of mapper.end()) yield event;
    } finally {
      guard.dispose();
    }
  }

  /** One non-streaming response, same retry policy; rejects with LlmError. */
  async complete(request: LlmRequest, signal?: AbortSignal): Promise<LlmCompletion> {
    const guard = new RequestGuard({ signal, timeoutMs: this.options.timeoutMs });
    try {
      if (guard.cause) throw new LlmError(guard.errorInfo()!);
      const response = await this.send(buildChatCompletionBody(request, this.model, false, this.options), request, guard);
      const body: unknown = await Promise.race([response.json(), guard.fired]);
      return this.toCompletion(body);
    } catch (err) {
      throw new LlmError(this.describe(err, guard));
    } finally {
      guard.dispose();
    }
  }

  async capabilities(): Promise<LlmCapabilities> {
    return {
      provider: this.provider,
      model: this.model,
      toolCalling: this.options.toolCalling ?? true,
      contextWindow: this.options.contextWindow,
      replay: false,
    };
  }

  /** Sends the request until its response headers say 2xx, retrying per the policy. */
  private send(body: Json, request: LlmRequest, guard: RequestGuard): Promise<Response> {
    const headers: Record<string, string> = {};
    // Correlation only; OpenAI logs it, other servers ignore unknown headers.
    if (request.requestId && /^[\x20-\x7e]{1,512}$/.test(request.requestId)) headers['X-Client-Request-Id'] = request.requestId;
    return withRetry(
      () =>
        this.client.chat.completions
          // The body is built by our mapper (provider extensions included), hence the cast.
          .create(body as unknown as OpenAI.Chat.ChatCompletionCreateParamsNonStreaming, { signal: guard.signal, headers })
          .asResponse(),
      (err) => this.classify(err),
      {
        policy: this.policy,
        signal: guard.signal,
        onRetry: (failure, delayMs, retry) => {
          this.logger.warn(`${this.model}: ${redactInfo(failure.info, [this.options.apiKey]).message}; retry ${retry} in ${delayMs} ms`);
          this.options.onRetry?.(failure.info);
        },
      },
    );
  }

  private classify(err: unknown): AttemptFailure | undefined {
    if (err instanceof APIError && typeof err.status === 'number') {
      const e = err.error;
      const message = isObject(e) && typeof e.message === 'string' ? e.message : typeof e === 'string' ? e : err.message;
      return classifyStatus(err.status, message, err.headers);
    }
    if (err instanceof APIError) {
      // APIConnectionError (status undefined): refused, reset, DNS…
      return classifyNetworkError(err) ?? { info: { code: 'network', message: err.message, retryable: true }, retry: true };
    }
    return classifyNetworkError(err);
  }

  private describe(err: unknown, guard: RequestGuard): LlmErrorInfo {
    return toLlmErrorInfo(err, { guard, secrets: [this.options.apiKey], classify: (e) => this.classify(e) });
  }

  private redactEvent(event: LlmStreamEvent): LlmStreamEvent {
    return event.type === 'error' ? { type: 'error', error: redactInfo(event.error, [this.options.apiKey]) } : event;
  }

  private toCompletion(body: unknown): LlmCompletion {
    if (!isObject(body)) throw new LlmError({ code: 'invalid_response', message: 'The completion is not a JSON object', retryable: false });
    if (body.error !== undefined && body.error !== null) throw new LlmError(providerErrorInfo(body.error));
    const choice = Array.isArray(body.choices) ? body.choices.find(isObject) : undefined;
    const message = choice && isObject(choice.message) ? choice.message : undefined;
    if (!choice || !message) throw new LlmError({ code: 'invalid_response', message: 'The completion has no choices', retryable: false });

    let content = typeof message.content === 'string' ? message.content : '';
    if (Array.isArray(message.content)) {
      content = message.content.map((p) => (isObject(p) && p.type === 'text' && typeof p.text === 'string' ? p.text : '')).join('');
    }
    const reasoning = [message.reasoning_content, message.reasoning].find((r): r is string => typeof r === 'string' && r.length > 0);
    const toolCalls: LlmToolCall[] = [];
    const rawCalls = Array.isArray(message.tool_calls) ? message.tool_calls : [];
    for (const [i, tc] of rawCalls.entries()) {
      const fn = isObject(tc) && isObject(tc.function) ? tc.function : undefined;
      if (!fn) continue;
      // kept even without a name, so the caller can refuse it as invalid rather than never see it;
      // missing arguments are "no arguments" (""), anything else is passed on as JSON, never coerced
      const args = typeof fn.arguments === 'string' ? fn.arguments : fn.arguments === undefined ? '' : JSON.stringify(fn.arguments);
      const name = typeof fn.name === 'string' ? fn.name : '';
      const id = isObject(tc) && typeof tc.id === 'string' && tc.id !== '' ? tc.id : `call_${i}_${Date.now().toString(36)}`;
      toolCalls.push({ id, name, arguments: args });
    }
    const rawReason = typeof choice.finish_reason === 'string' ? choice.finish_reason : undefined;
    const usage = readOpenAiUsage(body);
    return {
      content,
      ...(reasoning ? { reasoning } : {}),
      toolCalls,
      finishReason: normalizeFinishReason(rawReason, toolCalls.length > 0),
      ...(rawReason !== undefined ? { rawFinishReason: rawReason } : {}),
      ...(usage ? { usage } : {}),
    };
  }
}
