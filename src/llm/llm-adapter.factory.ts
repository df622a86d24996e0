import { parseExtraBody } from '../config/extra-body';
import { thinkingFamily } from './adapters/thinking-switch';
import { Injectable, Logger, Optional } from '@nestjs/common';
import { AppConfigService } from '../config/app-config.service';
import type { LlmProviderName } from '../config/env.schema';
import type { LlmAdapter } from './llm-adapter.port';
import type { HttpAdapterOptions } from './adapters/http-adapter.options';
import { LlmEvents, reportFirstChunk } from './llm-events';
import { OllamaAdapter } from './adapters/ollama.adapter';
import { OpenAiCompatibleAdapter } from './adapters/openai-compatible.adapter';
import { ReplayAdapter } from './adapters/replay.adapter';

/** Which model endpoint an adapter talks to. Unset fields come from the configuration. */
export interface LlmAdapterSettings {
  provider: LlmProviderName;
  baseUrl?: string;
  model?: string;
  /** defaults to LLM_API_KEY; not part of the cache key (one client per endpoint and model) */
  apiKey?: string;
  /** overrides LLM_TIMEOUT_MS / LLM_IDLE_TIMEOUT_MS / retry back-off for this adapter */
  timeoutMs?: number;
  idleTimeoutMs?: number;
  retry?: HttpAdapterOptions['retry'];
  /** replay only: pause between streamed words (default 15 ms) */
  replayDelayMs?: number;
}

/**
 * Creates LLM adapters, one per `(provider, baseUrl, model)`, and keeps them: an adapter holds
 * an SDK client (and, through fetch, a pool of kept-alive connections) and Ollama's capability
 * cache, so re-creating one per request would throw both away.
 */
@Injectable()
export class LlmAdapterFactory {
  private readonly logger = new Logger(LlmAdapterFactory.name);
  private readonly cache = new Map<string, LlmAdapter>();

  constructor(
    private readonly config: AppConfigService,
    @Optional() private readonly events?: LlmEvents,
  ) {}

  /** The adapter LLM_PROVIDER / LLM_BASE_URL / LLM_MODEL describe. */
  configured(): LlmAdapter {
    return this.get({ provider: this.config.get('LLM_PROVIDER') ?? (this.config.get('LLM_BASE_URL') ? 'openai' : 'replay') });
  }

  /** The cached adapter for these settings, created on first use. */
  get(settings: LlmAdapterSettings): LlmAdapter {
    const resolved = this.resolve(settings);
    const key = LlmAdapterFactory.cacheKey(resolved);
    let adapter = this.cache.get(key);
    if (!adapter) {
      adapter = this.create(resolved);
      if (this.events) adapter = reportFirstChunk(adapter, this.events);
      this.cache.set(key, adapter);
      // Never the key: only where requests go.
      this.logger.log(`LLM adapter: provider=${resolved.provider} baseUrl=${loggableUrl(resolved.baseUrl)} model=${resolved.model ?? '-'}`);
    }
    return adapter;
  }

  /** Number of adapters kept (tests). */
  get size(): number {
    return this.cache.size;
  }

  /** `provider|baseUrl|model`, with the base URL's trailing slashes ignored. */
  static cacheKey(settings: Pick<LlmAdapterSettings, 'provider' | 'baseUrl' | 'model'>): string {
    const base = (settings.baseUrl ?? '').replace(/\/+$/, '');
    return `${settings.provider}|${base}|${settings.model ?? ''}`;
  }

  private resolve(settings: LlmAdapterSettings): LlmAdapterSettings {
    if (settings.provider === 'replay') return { ...settings, baseUrl: undefined, model: 'replay' };
    return {
      ...settings,
      baseUrl: settings.baseUrl ?? this.config.get('LLM_BASE_URL'),
      model: settings.model ?? this.config.get('LLM_MODEL'),
      apiKey: settings.apiKey ?? this.config.get('LLM_API_KEY'),
    };
  }

  private create(s: LlmAdapterSettings): LlmAdapter {
    const contextWindow = this.config.get('LLM_CONTEXT_WINDOW');
    if (s.provider === 'replay') return new ReplayAdapter({ contextWindow, delayMs: s.replayDelayMs });
    if (!s.baseUrl || !s.model) {
      throw new Error(`LLM_PROVIDER=${s.provider} needs LLM_BASE_URL and LLM_MODEL`);
    }
    const options: HttpAdapterOptions = {
      baseUrl: s.baseUrl,
      model: s.model,
      apiKey: s.apiKey,
      timeoutMs: s.timeoutMs ?? this.config.get('LLM_TIMEOUT_MS'),
      idleTimeoutMs: s.idleTimeoutMs ?? this.config.get('LLM_IDLE_TIMEOUT_MS'),
      contextWindow,
      maxLineLength: this.config.get('LLM_MAX_LINE_LENGTH'),
      toolCalling: this.config.get('LLM_TOOL_CALLING'),
      thinking: thinkingFamily(this.config.get('LLM_THINKING_SWITCH'), s.model),
      thinkingOn: this.config.get('LLM_THINKING') === 'on',
      extraBody: parseExtraBody(this.config.get('LLM_EXTRA_BODY')),
      retry: s.retry,
      onRetry: (info) => this.events?.emit({ type: 'retry', provider: s.provider, model: s.model!, code: info.code }),
    };
    switch (s.provider) {
      case 'openai':
        return new OpenAiCompatibleAdapter(options);
      case 'ollama':
        return new OllamaAdapter(options);
      default:
        throw new Error(`Unknown LLM_PROVIDER=${String(s.provider)} (allowed: openai | ollama | replay)`);
    }
  }
}

/** The base URL without credentials or query (some people put a key in either). */
function loggableUrl(url: string | undefined): string {
  if (!url) return '-';
  try {
    const u = new URL(url);
    if (u.username || u.password) {
      u.username = '***';
      u.password = '';
    }
    u.search = '';
    return u.toString().replace(/\/$/, '');
  } catch {
    return '(unparseable URL)';
  }
}
