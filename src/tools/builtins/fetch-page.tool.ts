import type { AppConfigService } from '../../config/app-config.service';
import { assertUnreachable } from '../../common/util/assert-unreachable.util';
import { excerptOf, extractReadableText, plainText } from '../net/readable-text';
import { WebFetchError } from '../net/web-fetch.error';
import { WebFetcher, type WebFetcherOptions } from '../net/web-fetcher';
import {
  ToolFailure,
  type ToolDefinition,
  type ToolExecuteResult,
  type ToolExecutionContext,
  type ToolOutcome,
  type ToolSource,
} from '../tool-definition';

/**
 * `fetch_page` and `fetch_pages_batch`: http(s) pages as readable text for the model.
 * All network safety (schemes, address policy on every hop, byte cap, deadline) lives in
 * WebFetcher and the guarded dispatcher (../net); these classes shape results and errors.
 */

/** Per-page text budget of a batch: 48 000 characters shared, at most the single-page
 * default each, so 8 pages (6 000 each) still fit TOOL_RESULT_MAX_BYTES (64 KiB). */
const BATCH_TEXT_BUDGET = 48_000;
/** Parallel fetches in a batch: enough to overlap slow servers, few enough to be polite. */
const BATCH_CONCURRENCY = 4;
const DEFAULT_MAX_CHARS = 20_000;

export interface FetchPageToolOptions extends WebFetcherOptions {
  /** share one fetcher (one connection pool) between tools; it is then not closed by the tool */
  fetcher?: WebFetcher;
  /** default `maxChars` when the call gives none */
  maxChars?: number;
}

/** What AppConfigService offers that these tools read (structural, so tests need no Nest). */
export type FetchConfig = Pick<AppConfigService, 'list'> & Partial<Pick<AppConfigService, 'get'>>;

/** The network deadline of one page: TOOL_TIMEOUT_MS less a second for parsing, 1–15 s. */
export function fetchDeadlineMs(config: FetchConfig): number | undefined {
  const tool = config.get?.('TOOL_TIMEOUT_MS');
  return typeof tool === 'number' ? Math.min(15_000, Math.max(1_000, tool - 1_000)) : undefined;
}

/** One page as the model sees it. */
export interface FetchedPage {
  url: string;
  finalUrl: string;
  status: number;
  title: string;
  text: string;
  truncated: boolean;
  contentType: string;
  byline?: string;
  siteName?: string;
  /** set for HTTP statuses >= 400 */
  error?: string;
}

/** Maps the fetcher's reasons to tool outcomes (ToolRunner reports them as `outcome`). */
export function toToolFailure(err: WebFetchError): ToolFailure {
  const outcome: Exclude<ToolOutcome, 'success'> = (() => {
    switch (err.code) {
      case 'invalid_url':
      case 'unsupported_scheme':
      case 'credentials_in_url':
      case 'blocked_address':
      case 'unsupported_content':
        return 'validation_error';
      case 'rate_limited':
        return 'rate_limited';
      case 'timeout':
        return 'timeout';
      case 'too_many_redirects':
      case 'network':
        return 'exception';
      default:
        return assertUnreachable(err.code);
    }
  })();
  return new ToolFailure(outcome, err.message, { reason: err.code, ...err.details });
}

/** Fetches one URL and turns it into a FetchedPage plus its source entry. */
async function readPage(
  fetcher: WebFetcher,
  url: string,
  maxChars: number,
  signal: AbortSignal,
): Promise<{ page: FetchedPage; source?: ToolSource }> {
  let res;
  try {
    res = await fetcher.fetch(url, signal);
  } catch (err) {
    throw err instanceof WebFetchError ? toToolFailure(err) : err;
  }
  const doc = res.kind === 'html' ? extractReadableText(res.body, { maxChars }) : plainText(res.body, maxChars);
  const page: FetchedPage = {
    url: res.url,
    finalUrl: res.finalUrl,
    status: res.status,
    title: doc.title || new URL(res.finalUrl).host,
    text: doc.text,
    truncated: res.truncated || doc.truncated,
    contentType: res.contentType,
    ...(doc.byline ? { byline: doc.byline } : {}),
    ...(doc.siteName ? { siteName: doc.siteName } : {}),
  };
  if (res.status >= 400) return { page: { ...page, error: `HTTP ${res.status} from ${new URL(res.finalUrl).host}` } };
  return { page, source: { type: 'web', title: page.title, url: page.finalUrl, snippet: doc.excerpt || excerptOf(doc.text) } };
}

function hostOf(url: string): string {
  try {
    return new URL(url).host || url;
  } catch {
    return url.slice(0, 80);
  }
}

/** Shared construction for both tools. */
abstract class PageToolBase {
  readonly origin = 'builtin' as const;
  /** it only reads: a call cut off by an instance's death runs again on the instance that continues the turn */
  readonly hints = { readOnly: true };
  /** what it reads can change within a turn (a log, a status page): a repeat runs again */
  readonly repeat = 'rerun' as const;
  protected readonly fetcher: WebFetcher;
  protected readonly defaultMaxChars: number;
  private readonly ownsFetcher: boolean;

  constructor(options: FetchPageToolOptions = {}) {
    this.ownsFetcher = !options.fetcher;
    this.fetcher = options.fetcher ?? new WebFetcher(options);
    this.defaultMaxChars = options.maxChars ?? DEFAULT_MAX_CHARS;
  }

  isAvailable(): boolean {
    return true;
  }

  /** Closes the connection pool (Nest calls this on shutdown; tests call it directly). */
  async onModuleDestroy(): Promise<void> {
    if (this.ownsFetcher) await this.fetcher.close();
  }
}

export class FetchPageTool extends PageToolBase implements ToolDefinition {
  readonly name = 'fetch_page';
  readonly description =
    'Fetch one http(s) web page and return its readable text (title, main text; HTML is reduced to the article). ' +
    'Plain text, Markdown and JSON are returned as text. Private, loopback and link-local addresses are refused.';
  readonly parameters = {
    type: 'object',
    properties: {
      url: { type: 'string', minLength: 1, maxLength: 2048, description: 'absolute http(s) URL' },
      maxChars: { type: 'integer', minimum: 200, maximum: 100_000, description: `characters of text to return (default ${DEFAULT_MAX_CHARS})` },
    },
    required: ['url'],
    additionalProperties: false,
  };
  /** for ToolRunner: the fetcher's own deadline plus time to parse */
  readonly timeoutMs = this.fetcher.timeoutMs + 5_000;

  static fromConfig(config: FetchConfig, fetcher?: WebFetcher): FetchPageTool {
    return new FetchPageTool({ allowHosts: config.list('FETCH_ALLOW_HOSTS'), fetcher, timeoutMs: fetchDeadlineMs(config) });
  }

  async execute(args: Record<string, unknown>, ctx: ToolExecutionContext): Promise<ToolExecuteResult> {
    const url = String(args.url ?? '');
    const maxChars = typeof args.maxChars === 'number' ? args.maxChars : this.defaultMaxChars;
    ctx.progress?.({ stage: 'fetching', message: `Fetching ${hostOf(url)}…`, metadata: { url } });
    const { page, source } = await readPage(this.fetcher, url, maxChars, ctx.signal);
    return { output: page, isError: page.status >= 400, sources: source ? [source] : [] };
  }
}

/** A batch entry: the page, or why it failed (one failure never fails the batch). */
export type BatchEntry =
  | ({ ok: true } & FetchedPage)
  | { ok: false; url: string; outcome: ToolOutcome; error: string; status?: number };

export class FetchPagesBatchTool extends PageToolBase implements ToolDefinition {
  readonly name = 'fetch_pages_batch';
  readonly description =
    'Fetch up to 8 http(s) pages in parallel and return the readable text of each; a page that fails is reported ' +
    'in its own entry. Private, loopback and link-local addresses are refused.';
  readonly parameters = {
    type: 'object',
    properties: {
      urls: {
        type: 'array',
        items: { type: 'string', minLength: 1, maxLength: 2048 },
        minItems: 1,
        maxItems: 8,
        description: 'absolute http(s) URLs',
      },
    },
    required: ['urls'],
    additionalProperties: false,
  };
  /** for ToolRunner: two rounds of BATCH_CONCURRENCY fetches plus parsing */
  readonly timeoutMs = 2 * this.fetcher.timeoutMs + 10_000;

  static fromConfig(config: FetchConfig, fetcher?: WebFetcher): FetchPagesBatchTool {
    return new FetchPagesBatchTool({ allowHosts: config.list('FETCH_ALLOW_HOSTS'), fetcher, timeoutMs: fetchDeadlineMs(config) });
  }

  async execute(args: Record<string, unknown>, ctx: ToolExecutionContext): Promise<ToolExecuteResult> {
    const urls = (Array.isArray(args.urls) ? args.urls : []).map(String).slice(0, 8);
    if (urls.length === 0) throw new ToolFailure('validation_error', 'urls must hold 1 to 8 URLs');
    const maxChars = Math.min(this.defaultMaxChars, Math.floor(BATCH_TEXT_BUDGET / urls.length));
    const results = new Array<BatchEntry>(urls.length);
    const sources: ToolSource[] = [];
    let next = 0;
    let started = 0;
    const worker = async () => {
      while (next < urls.length) {
        const i = next++;
        ctx.progress?.({
          stage: 'fetching',
          message: `Fetching page ${++started} of ${urls.length}…`,
          metadata: { url: urls[i], index: i },
        });
        try {
          const { page, source } = await readPage(this.fetcher, urls[i], maxChars, ctx.signal);
          results[i] = page.error
            ? { ok: false, url: urls[i], outcome: 'exception', error: page.error, status: page.status }
            : { ok: true, ...page };
          if (source) sources[i] = source;
        } catch (err) {
          if (ctx.signal.aborted) throw err;
          const failure = err instanceof ToolFailure ? err : new ToolFailure('exception', (err as Error)?.message ?? String(err));
          results[i] = { ok: false, url: urls[i], outcome: failure.outcome, error: failure.message };
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(BATCH_CONCURRENCY, urls.length) }, worker));
    const succeeded = results.filter((r) => r.ok).length;
    return {
      output: { results, succeeded, failed: urls.length - succeeded },
      isError: succeeded === 0,
      sources: sources.filter(Boolean),
    };
  }
}
