import type { Readable } from 'node:stream';
import { Agent, request, type Dispatcher } from 'undici';
import type { AppConfigService } from '../../config/app-config.service';
import { abortReason, deadline } from '../../common/util/abort.util';
import { excerptOf } from '../net/readable-text';
import { decoderFor, discardBody, readCapped } from '../net/response-body';
import {
  ToolFailure,
  type ToolDefinition,
  type ToolExecuteResult,
  type ToolExecutionContext,
  type ToolSource,
} from '../tool-definition';

/**
 * `web_search` on a SearXNG instance's JSON API (`GET {SEARXNG_URL}/search?q=…&format=json`).
 *
 * SEARXNG_URL is NOT put through the fetch_page address policy: it is set by the operator
 * (usually a sidecar on localhost or a private network, which the policy would refuse),
 * and the model controls only the query string, sent URL-encoded as `q`. The model can never
 * choose the host, port or path, and redirects are not followed. The request still has a
 * deadline and a byte cap, like every outbound call.
 */

/** 10 s: SearXNG's own per-engine timeouts are 3–6 s by default, plus merging. 1 MiB holds a
 * result page many times over (a typical answer is 20–60 KB). */
export const WEB_SEARCH_DEFAULTS = { timeoutMs: 10_000, maxBytes: 1024 * 1024, snippetChars: 500 } as const;

/** Why web_search cannot run without a backend, and what to set: in listings, refusals and /search. */
const UNCONFIGURED = 'not configured: no SearXNG instance (set SEARXNG_URL)';

export interface WebSearchToolOptions {
  /** base URL of the SearXNG instance; unset: the tool is registered but unavailable */
  searxngUrl?: string;
  timeoutMs?: number;
  maxBytes?: number;
}

/** One result as the model sees it. */
export interface WebSearchResult {
  title: string;
  url: string;
  snippet: string;
  engine?: string;
  score?: number;
}

/** The part of SearXNG's `format=json` answer this tool reads. */
interface SearxngAnswer {
  query?: string;
  results?: Array<{ url?: string; title?: string; content?: string; engine?: string; score?: number }>;
  answers?: unknown[];
  suggestions?: unknown[];
}

export class WebSearchTool implements ToolDefinition {
  readonly name = 'web_search';
  readonly description =
    'Search the web (SearXNG) and return the top results: title, URL and snippet. ' +
    'Use fetch_page or fetch_pages_batch afterwards to read a result.';
  readonly parameters = {
    type: 'object',
    properties: {
      query: { type: 'string', minLength: 1, maxLength: 500, description: 'search terms' },
      maxResults: { type: 'integer', minimum: 1, maximum: 20, default: 5, description: 'results to return (default 5)' },
    },
    required: ['query'],
    additionalProperties: false,
  };
  readonly origin = 'builtin' as const;
  /** it only reads: a call cut off by an instance's death runs again on the instance that continues the turn */
  readonly hints = { readOnly: true };
  /** for ToolRunner: the request deadline plus a margin to map the answer */
  readonly timeoutMs: number;

  private readonly searxngUrl?: string;
  private readonly requestTimeoutMs: number;
  private readonly maxBytes: number;
  private readonly dispatcher: Dispatcher;

  constructor(options: WebSearchToolOptions = {}) {
    this.searxngUrl = options.searxngUrl?.trim() || undefined;
    this.requestTimeoutMs = options.timeoutMs ?? WEB_SEARCH_DEFAULTS.timeoutMs;
    this.timeoutMs = this.requestTimeoutMs + 2_000;
    this.maxBytes = options.maxBytes ?? WEB_SEARCH_DEFAULTS.maxBytes;
    this.dispatcher = new Agent({ headersTimeout: this.requestTimeoutMs, bodyTimeout: this.requestTimeoutMs, keepAliveTimeout: 4_000 });
  }

  static fromConfig(config: Pick<AppConfigService, 'get'>): WebSearchTool {
    return new WebSearchTool({ searxngUrl: config.get('SEARXNG_URL') });
  }

  private closing?: Promise<void>;

  isAvailable(): boolean {
    return !!this.searxngUrl;
  }

  unavailableReason(): string | undefined {
    return this.searxngUrl ? undefined : UNCONFIGURED;
  }

  async onModuleDestroy(): Promise<void> {
    // Nest may call this once per module that lists the tool; a second close() would throw
    this.closing ??= this.dispatcher.close();
    await this.closing;
  }

  async execute(args: Record<string, unknown>, ctx: ToolExecutionContext): Promise<ToolExecuteResult> {
    if (!this.searxngUrl) throw new ToolFailure('unavailable', `web_search is ${UNCONFIGURED}`);
    const query = String(args.query ?? '').trim();
    if (!query) throw new ToolFailure('validation_error', 'query must not be empty');
    const maxResults = typeof args.maxResults === 'number' ? args.maxResults : 5;
    ctx.progress?.({ stage: 'searching', message: 'Searching the web…', metadata: { query } });

    const answer = await this.search(query, ctx.signal);
    const results = mapResults(answer, maxResults);
    const strings = (xs: unknown[] | undefined) =>
      (xs ?? []).map((x) => (typeof x === 'string' ? x : (x as { answer?: unknown })?.answer)).filter((x): x is string => typeof x === 'string');
    const answers = strings(answer.answers);
    const suggestions = strings(answer.suggestions);
    const sources: ToolSource[] = results.map((r) => ({ type: 'web', title: r.title, url: r.url, snippet: r.snippet, ...(r.engine ? { engine: r.engine } : {}) }));
    return {
      output: { query, results, ...(answers.length ? { answers } : {}), ...(suggestions.length ? { suggestions } : {}) },
      sources,
    };
  }

  private async search(query: string, signal: AbortSignal): Promise<SearxngAnswer> {
    const base = this.searxngUrl!.endsWith('/') ? this.searxngUrl! : `${this.searxngUrl}/`;
    const url = new URL('search', base);
    url.searchParams.set('q', query);
    url.searchParams.set('format', 'json');
    const limit = deadline(signal, this.requestTimeoutMs, { unref: true });
    const combined = limit.signal;
    try {
      const res = await request(url, { method: 'GET', dispatcher: this.dispatcher, signal: combined, headers: { accept: 'application/json' } });
      if (res.statusCode !== 200) {
        discardBody(res.body);
        throw statusFailure(res.statusCode);
      }
      const decoder = decoderFor(res.headers['content-encoding']);
      if (decoder === 'unsupported') throw new ToolFailure('exception', 'SearXNG answered with an unsupported content encoding');
      const { bytes, truncated } = await readCapped(res.body as unknown as Readable, decoder, this.maxBytes, combined);
      if (truncated) throw new ToolFailure('exception', `SearXNG answer exceeded ${this.maxBytes} bytes`);
      try {
        return JSON.parse(bytes.toString('utf8')) as SearxngAnswer;
      } catch {
        throw new ToolFailure('exception', 'SearXNG answered with invalid JSON (is format=json enabled?)');
      }
    } catch (err) {
      if (signal.aborted) throw abortReason(signal);
      if (limit.timedOut) throw new ToolFailure('timeout', `SearXNG did not answer within ${this.requestTimeoutMs} ms`);
      if (err instanceof ToolFailure) throw err;
      throw new ToolFailure('exception', `SearXNG request failed: ${(err as Error)?.message ?? String(err)}`);
    } finally {
      limit.dispose();
    }
  }
}

function statusFailure(status: number): ToolFailure {
  if (status === 429) return new ToolFailure('rate_limited', 'SearXNG is rate limiting requests (HTTP 429)');
  if (status === 403) {
    return new ToolFailure('unavailable', 'SearXNG refused the JSON API (HTTP 403): add "json" to search.formats in its settings.yml');
  }
  return new ToolFailure('exception', `SearXNG answered HTTP ${status}`);
}

/** Results with a usable http(s) URL, in SearXNG's order (already ranked by score), capped. */
function mapResults(answer: SearxngAnswer, maxResults: number): WebSearchResult[] {
  const out: WebSearchResult[] = [];
  const seen = new Set<string>();
  for (const r of Array.isArray(answer.results) ? answer.results : []) {
    if (out.length >= maxResults) break;
    if (typeof r?.url !== 'string' || !/^https?:\/\//i.test(r.url) || seen.has(r.url)) continue;
    seen.add(r.url);
    out.push({
      title: (typeof r.title === 'string' && r.title.trim()) || r.url,
      url: r.url,
      snippet: excerptOf(typeof r.content === 'string' ? r.content : '', WEB_SEARCH_DEFAULTS.snippetChars),
      ...(typeof r.engine === 'string' ? { engine: r.engine } : {}),
      ...(typeof r.score === 'number' && Number.isFinite(r.score) ? { score: r.score } : {}),
    });
  }
  return out;
}
