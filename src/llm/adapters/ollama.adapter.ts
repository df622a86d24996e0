import type { LlmCapabilities, LlmCompletion, LlmRequest, LlmStreamEvent } from '../llm-adapter.port';
import { collectCompletion } from '../collect-completion';
import { RequestGuard } from '../request-guard';
import { classifyNetworkError, classifyStatus, type AttemptFailure } from '../retry-policy';
import { HttpStatusError, postJson } from '../wire/http-json';
import { LineDecoder } from '../wire/line-decoder';
import type { HttpAdapterOptions } from './http-adapter.options';
import { OllamaChunkMapper } from './ollama-chunk.mapper';
import { buildOllamaChatBody } from './ollama-request.mapper';
import { StreamingHttpAdapter, type StreamDecoder } from './streaming-adapter';

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
export class OllamaAdapter extends StreamingHttpAdapter {
  readonly provider = 'ollama';
  private readonly root: string;
  /** per model; a failed lookup is dropped so the next call asks again */
  private readonly showCache = new Map<string, Promise<OllamaModelInfo>>();

  constructor(options: HttpAdapterOptions) {
    super(options);
    // Accept the base URL with or without a trailing /v1 or /api (people paste either).
    this.root = options.baseUrl.replace(/\/+$/, '').replace(/\/(v1|api)$/, '');
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

  protected async buildBody(request: LlmRequest, stream: boolean): Promise<Record<string, unknown>> {
    const thinking = request.disableReasoning ? await this.supports('thinking') : false;
    return buildOllamaChatBody(request, this.model, stream, thinking, this.options);
  }

  protected post(body: Record<string, unknown>, _request: LlmRequest, signal: AbortSignal): Promise<Response> {
    return postJson(`${this.root}/api/chat`, body, { signal, headers: this.authHeaders() });
  }

  /** NDJSON: one JSON object a line, until the one with `done: true`. */
  protected decoder(): StreamDecoder {
    const lines = new LineDecoder(this.options.maxLineLength);
    const mapper = new OllamaChunkMapper();
    return {
      get ended() {
        return mapper.ended;
      },
      push: (bytes) => mapLines(lines.push(bytes), mapper),
      flush: () => mapLines(lines.end(), mapper),
      end: () => mapper.end(),
    };
  }

  protected parseCompletion(body: unknown): Promise<LlmCompletion> {
    const mapper = new OllamaChunkMapper();
    return collectCompletion([...mapper.mapObject(body), ...mapper.end()]);
  }

  protected classify(err: unknown): AttemptFailure | undefined {
    if (err instanceof HttpStatusError) return classifyStatus(err.status, err.serverMessage, err.headers);
    return classifyNetworkError(err);
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

  /** Ollama needs no key, but a reverse proxy in front of it may. */
  private authHeaders(): Record<string, string> {
    return this.options.apiKey ? { authorization: `Bearer ${this.options.apiKey}` } : {};
  }
}

function* mapLines(lines: string[], mapper: OllamaChunkMapper): Generator<LlmStreamEvent> {
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
    yield* mapper.mapObject(obj);
  }
}
