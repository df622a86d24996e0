import OpenAI, { APIError } from 'openai';
import type { LlmCapabilities, LlmCompletion, LlmRequest, LlmStreamEvent, LlmToolCall } from '../llm-adapter.port';
import { LlmError } from '../llm-adapter.port';
import { normalizeFinishReason } from '../finish-reason';
import { classifyNetworkError, classifyStatus, type AttemptFailure } from '../retry-policy';
import { modelFetch } from '../wire/model-fetch';
import { SseDecoder, type SseMessage } from '../wire/sse-decoder';
import type { HttpAdapterOptions } from './http-adapter.options';
import { OpenAiChunkMapper, providerErrorInfo, readOpenAiUsage } from './openai-chunk.mapper';
import { buildChatCompletionBody } from './openai-request.mapper';
import { StreamingHttpAdapter, type StreamDecoder } from './streaming-adapter';

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
 * overall timeouts and the caller's signal to every byte. The request lifecycle (guard, retries
 * before the first byte only, error reporting) is {@link StreamingHttpAdapter}'s.
 */
export class OpenAiCompatibleAdapter extends StreamingHttpAdapter {
  readonly provider = 'openai';
  private readonly client: OpenAI;

  constructor(options: HttpAdapterOptions) {
    super(options);
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

  async capabilities(): Promise<LlmCapabilities> {
    return {
      provider: this.provider,
      model: this.model,
      toolCalling: this.options.toolCalling ?? true,
      contextWindow: this.options.contextWindow,
      replay: false,
    };
  }

  protected buildBody(request: LlmRequest, stream: boolean): Json {
    return buildChatCompletionBody(request, this.model, stream, this.options);
  }

  protected post(body: Json, request: LlmRequest, signal: AbortSignal): Promise<Response> {
    const headers: Record<string, string> = {};
    // Correlation only; OpenAI logs it, other servers ignore unknown headers.
    if (request.requestId && /^[\x20-\x7e]{1,512}$/.test(request.requestId)) headers['X-Client-Request-Id'] = request.requestId;
    return (
      this.client.chat.completions
        // The body is built by our mapper (provider extensions included), hence the cast.
        .create(body as unknown as OpenAI.Chat.ChatCompletionCreateParamsNonStreaming, { signal, headers })
        .asResponse()
    );
  }

  /** A server that ignored `stream: true` answers with one JSON completion. */
  protected answeredWhole(response: Response): boolean {
    return /application\/json/i.test(response.headers.get('content-type') ?? '');
  }

  /** SSE `data:` messages, one chunk each, until `[DONE]`. */
  protected decoder(): StreamDecoder {
    const sse = new SseDecoder(this.options.maxLineLength);
    const mapper = new OpenAiChunkMapper();
    function* map(messages: SseMessage[]): Generator<LlmStreamEvent> {
      for (const msg of messages) {
        yield* mapper.mapMessage(msg);
        if (mapper.ended) return;
      }
    }
    return {
      get ended() {
        return mapper.ended;
      },
      push: (bytes) => map(sse.push(bytes)),
      flush: () => map(sse.end()),
      end: () => mapper.end(),
    };
  }

  protected classify(err: unknown): AttemptFailure | undefined {
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

  protected parseCompletion(body: unknown): LlmCompletion {
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
