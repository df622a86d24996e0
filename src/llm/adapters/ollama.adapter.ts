import { Logger } from '@nestjs/common';
import type { LlmAdapter, LlmCapabilities, LlmCompletion, LlmErrorInfo, LlmRequest, LlmStreamEvent } from '../llm-adapter.port';
import { LlmError } from '../llm-adapter.port';
import { collectCompletion } from '../collect-completion';
import { redactInfo, toLlmErrorInfo } from '../llm-error.util';
import { RequestGuard } from '../request-guard';
import { classifyNetworkError, classifyStatus, DEFAULT_RETRY_POLICY, withRetry, type AttemptFailure, type RetryPolicy } from '../retry-policy';
import { HttpStatusError, postJson } from '../wire/http-json';
import { LineDecoder } from '../wire/line-decoder';
import { bodyOf } from '../wire/model-fetch';
import { readBody } from '../wire/read-body';
import type { HttpAdapterOptions } from './http-adapter.options';
import { OllamaChunkMapper } from './ollama-chunk.mapper';
import { buildOllamaChatBody } from './ollama-request.mapper';

/** What `/api/show` told us about a model. */
interface OllamaModelInfo {
  /** undefined: this Ollama is too old to report capabilities */
  capabilities?: string[];
  /** the smaller of the model's `*.context_length` and a `num_ctx` set in its parameters */
  contextLength?: number;
}

/** The window Ollama will really use: `num_ctx` when the model sets it, else the model's context length. */
function contextLengthOf(body: { model_info?: unknown; parameters?: unknown }): number | undefined {
  const lengths: number[] = [];
  if (body.model_info && typeof body.model_info === 'object') {
    for (const [k, v] of Object.entries(body.model_info as Record<string, unknown>)) {
      if (k.endsWith('.context_length') && typeof v === 'number' && v > 0) lengths.push(v);
    }
  }
  const numCtx = typeof body.parameters === 'string' ? /(?:^|\n)\s*num_ctx\s+(\d+)/.exec(body.parameters)?.[1] : undefined;
  if (numCtx) lengths.push(Number(numCtx));
  return lengths.length ? Math.min(...lengths) : undefined;
}

/** /api/show is a local metadata lookup: if it takes longer than this, fall back to configuration. */
const SHOW_TIMEOUT_MS = 10_000;

/**
 * Ollama's native API: `/api/chat` streamed as NDJSON, `/api/show` for capabilities.
 *
 * Native rather than Ollama's /v1 because /api/show tells whether the model can call tools
 * (`"tools"` in `capabilities`) and whether it thinks, and because native tool calls arrive whole
 * with object arguments (see OllamaChunkMapper). Same retry, idle and abort policy as the
 * OpenAI-compatible adapter (retry-policy.ts, RequestGuard).
 */
export class OllamaAdapter implements LlmAdapter {
  readonly provider = 'ollama';
  readonly model: string;
  private readonly root: string;
  private readonly policy: RetryPolicy;
  private readonly logger = new Logger(OllamaAdapter.name);
  /** per model; a failed lookup is dropped so the next call asks again */
  private readonly showCache = new Map<string, Promise<OllamaModelInfo>>();

  constructor(private readonly options: HttpAdapterOptions) {
    this.model = options.model;
    this.policy = { ...DEFAULT_RETRY_POLICY, ...options.retry };
    // Accept the base URL with or without a trailing /v1 or /api (people paste either).
    this.root = options.baseUrl.replace(/\/+$/, '').replace(/\/(v1|api)$/, '');
  }

  /** Streams one response; never throws (failures are one final `error` event). */
  async *stream(request: LlmRequest, signal?: AbortSignal): AsyncGenerator<LlmStreamEvent> {
    const guard = new RequestGuard({ signal, timeoutMs: this.options.timeoutMs, idleTimeoutMs: this.options.idleTimeoutMs });
    try {
      if (guard.cause) {
        yield { type: 'error', error: guard.errorInfo()! };
        return;
      }
      let response: Response;
      try {
        const thinking = request.disableReasoning ? await this.supports('thinking') : false;
        response = await this.send(buildOllamaChatBody(request, this.model, true, thinking, this.options), guard);
      } catch (err) {
        yield { type: 'error', error: this.describe(err, guard) };
        return;
      }
      const lines = new LineDecoder(this.options.maxLineLength);
      const mapper = new OllamaChunkMapper();
      try {
        for await (const bytes of readBody(bodyOf(response), guard)) {
          for (const event of this.mapLines(lines.push(bytes), mapper)) {
            // One network chunk can hold many lines: stop between them once aborted.
            if (guard.cause) throw guard.signal.reason;
            yield event;
          }
          if (mapper.ended) break;
        }
        if (!mapper.ended) for (const event of this.mapLines(lines.end(), mapper)) yield event;
      } catch (err) {
        yield { type: 'error', error: this.describe(err, guard) };
        return;
      }
      for (const event of mapper.end()) yield event;
    } finally {
      guard.dispose();
    }
  }

  /** `stream:false`; same retry policy; rejects with LlmError. */
  async complete(request: LlmRequest, signal?: AbortSignal): Promise<LlmCompletion> {
    const guard = new RequestGuard({ signal, timeoutMs: this.options.timeoutMs });
    try {
      if (guard.cause) throw new LlmError(guard.errorInfo()!);
      const thinking = request.disableReasoning ? await this.supports('thinking') : false;
      const response = await this.send(buildOllamaChatBody(request, this.model, false, thinking, this.options), guard);
      const body: unknown = await Promise.race([response.json(), guard.fired]);
      const mapper = new OllamaChunkMapper();
      return await collectCompletion([...mapper.mapObject(body), ...mapper.end()]);
    } catch (err) {
      throw new LlmError(this.describe(err, guard));
    } finally {
      guard.dispose();
    }
  }

  /** Tool calling as reported by /api/show (cached per model); LLM_TOOL_CALLING when Ollama cannot say. */
  async capabilities(): Promise<LlmCapabilities> {
    const info = await this.show();
    return {
      provider: this.provider,
      model: this.model,
      toolCalling: info.capabilities ? info.capabilities.includes('tools') : (this.options.toolCalling ?? true),
      // never more than the model (or its num_ctx) allows, nor more than configured
      contextWindow: Math.min(this.options.contextWindow, info.contextLength ?? Number.POSITIVE_INFINITY),
      replay: false,
    };
  }

  private async supports(capability: string): Promise<boolean> {
    return (await this.show()).capabilities?.includes(capability) ?? false;
  }

  private show(): Promise<OllamaModelInfo> {
    let cached = this.showCache.get(this.model);
    if (!cached) {
      cached = this.fetchShow().catch((err: unknown) => {
        this.showCache.delete(this.model);
        this.logger.warn(`/api/show for ${this.model} failed (${this.describe(err).message}); using LLM_TOOL_CALLING`);
        return {};
      });
      this.showCache.set(this.model, cached);
    }
    return cached;
  }

  private async fetchShow(): Promise<OllamaModelInfo> {
    const guard = new RequestGuard({ timeoutMs: Math.min(this.options.timeoutMs, SHOW_TIMEOUT_MS) });
    try {
      const response = await postJson(`${this.root}/api/show`, { model: this.model, name: this.model }, { signal: guard.signal, headers: this.authHeaders() });
      const body = (await Promise.race([response.json(), guard.fired])) as { capabilities?: unknown; model_info?: unknown; parameters?: unknown };
      const caps = Array.isArray(body?.capabilities) ? body.capabilities.filter((c): c is string => typeof c === 'string') : undefined;
      const contextLength = body ? contextLengthOf(body) : undefined;
      return { ...(caps ? { capabilities: caps } : {}), ...(contextLength ? { contextLength } : {}) };
    } finally {
      guard.dispose();
    }
  }

  private send(body: Record<string, unknown>, guard: RequestGuard): Promise<Response> {
    return withRetry(
      () => postJson(`${this.root}/api/chat`, body, { signal: guard.signal, headers: this.authHeaders() }),
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

  /** Ollama needs no key, but a reverse proxy in front of it may. */
  private authHeaders(): Record<string, string> {
    return this.options.apiKey ? { authorization: `Bearer ${this.options.apiKey}` } : {};
  }

  private *mapLines(lines: string[], mapper: OllamaChunkMapper): Generator<LlmStreamEvent> {
    for (const line of lines) {
      if (mapper.ended) return;
      if (line.trim() === '') continue;
      let obj: unknown;
      try {
        obj = JSON.parse(line);
      } catch {
        yield* mapper.invalidLine(line);
        return;
      }
      for (const event of mapper.mapObject(obj)) yield event.type === 'error' ? { type: 'error', error: redactInfo(event.error, [this.options.apiKey]) } : event;
    }
  }

  private classify(err: unknown): AttemptFailure | undefined {
    if (err instanceof HttpStatusError) return classifyStatus(err.status, err.serverMessage, err.headers);
    return classifyNetworkError(err);
  }

  private describe(err: unknown, guard?: RequestGuard): LlmErrorInfo {
    return toLlmErrorInfo(err, { guard, secrets: [this.options.apiKey], classify: (e) => this.classify(e) });
  }
}
