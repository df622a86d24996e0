import type { Readable } from 'node:stream';
import { errors as undiciErrors, request, type Dispatcher } from 'undici';
import { abortReason, deadline } from '../../common/util/abort.util';
import { AddressPolicy, describeVerdict } from '../../common/net/address-policy';
import { BlockedAddressError, createGuardedDispatcher, type HostResolver } from '../../common/net/guarded-dispatcher';
import {
  contentKindOf,
  decodeBody,
  decoderFor,
  discardBody,
  parseContentType,
  readCapped,
  sniffContentKind,
  type ContentKind,
} from './response-body';
import { WebFetchError } from './web-fetch.error';

/**
 * Fetches one web resource for the model, safely:
 * - only http: and https:; URLs with credentials (`user:pass@host`) are refused rather than
 *   stripped, because a model has no business sending credentials and silently changing the
 *   URL would hide that;
 * - any port is allowed: the address decides, not the port (a public server on :8080 is
 *   fine; nothing private is reachable on any port);
 * - every connection goes through the guarded dispatcher (connect-time address checks);
 * - redirects are followed by hand (at most `maxRedirects`), each hop re-checked;
 * - the body is streamed and cut at `maxBytes` (after decompression);
 * - one deadline covers all hops and the body.
 */

/** Defaults: 15 s and 2 MiB keep a slow or huge page well inside the 30 s TOOL_TIMEOUT_MS and
 * the text budget (a 2 MiB HTML page is far more than the 20 000 characters we keep). Five
 * redirects is what browsers' own loop guards allow for in practice (Fetch allows 20). */
export const WEB_FETCH_DEFAULTS = {
  timeoutMs: 15_000,
  maxBytes: 2 * 1024 * 1024,
  maxRedirects: 5,
  userAgent: 'Orion-fetch/0.1 (LLM tool fetch_page)',
} as const;

export interface WebFetcherOptions {
  /** FETCH_ALLOW_HOSTS entries (`host` or `host:port`) reachable even when private */
  allowHosts?: readonly string[];
  timeoutMs?: number;
  maxBytes?: number;
  maxRedirects?: number;
  userAgent?: string;
  /** DNS used at connect time (tests inject one to simulate rebinding) */
  resolver?: HostResolver;
}

/** A fetched resource, decoded to a string. */
export interface FetchedResource {
  /** the URL asked for (normalized) */
  url: string;
  /** the URL of the last hop */
  finalUrl: string;
  status: number;
  /** MIME type without parameters ('' when the server sent none) */
  contentType: string;
  kind: ContentKind;
  body: string;
  /** the body was cut at maxBytes */
  truncated: boolean;
  /** every hop after the first */
  redirects: string[];
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);
const ACCEPT = 'text/html,application/xhtml+xml,text/plain;q=0.9,text/markdown;q=0.9,application/json;q=0.8,*/*;q=0.1';

export class WebFetcher {
  readonly policy: AddressPolicy;
  private readonly dispatcher: Dispatcher;
  /** the deadline of one fetch, all hops and the body included */
  readonly timeoutMs: number;
  private readonly maxBytes: number;
  private readonly maxRedirects: number;
  private readonly userAgent: string;

  constructor(options: WebFetcherOptions = {}) {
    this.policy = new AddressPolicy({ allowHosts: options.allowHosts });
    this.timeoutMs = options.timeoutMs ?? WEB_FETCH_DEFAULTS.timeoutMs;
    this.maxBytes = options.maxBytes ?? WEB_FETCH_DEFAULTS.maxBytes;
    this.maxRedirects = options.maxRedirects ?? WEB_FETCH_DEFAULTS.maxRedirects;
    this.userAgent = options.userAgent ?? WEB_FETCH_DEFAULTS.userAgent;
    this.dispatcher = createGuardedDispatcher({
      policy: this.policy,
      resolver: options.resolver,
      headersTimeoutMs: this.timeoutMs,
      bodyTimeoutMs: this.timeoutMs,
    });
  }

  /** Fetches `url`; throws WebFetchError, or the caller signal's reason when it aborts. */
  async fetch(url: string, signal?: AbortSignal): Promise<FetchedResource> {
    const first = this.checkUrl(url);
    const limit = deadline(signal, this.timeoutMs, { unref: true });
    try {
      return await this.follow(first, limit.signal);
    } catch (err) {
      if (signal?.aborted) throw abortReason(signal);
      if (limit.timedOut) {
        throw new WebFetchError('timeout', `Timed out after ${this.timeoutMs} ms fetching ${first.href}`, { url: first.href });
      }
      throw this.classify(err, first.href);
    } finally {
      limit.dispose();
    }
  }

  private closed = false;

  /** Closes pooled connections (call on shutdown); idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.dispatcher.close().catch(() => undefined);
  }

  private async follow(start: URL, signal: AbortSignal): Promise<FetchedResource> {
    const redirects: string[] = [];
    let current = start;
    for (;;) {
      const res = await this.requestHop(current, signal, current === start ? '' : ` (redirected from ${start.href})`);
      const location = res.headers.location;
      if (REDIRECTS.has(res.statusCode) && location) {
        discardBody(res.body);
        if (redirects.length >= this.maxRedirects) {
          throw new WebFetchError('too_many_redirects', `Too many redirects (more than ${this.maxRedirects}) fetching ${start.href}`, {
            url: start.href,
            redirects,
          });
        }
        current = this.checkUrl(String(Array.isArray(location) ? location[0] : location), current, start);
        redirects.push(current.href);
        continue;
      }
      return this.readResponse(start, current, res, redirects, signal);
    }
  }

  private async requestHop(url: URL, signal: AbortSignal, from: string): Promise<Dispatcher.ResponseData> {
    const target = new URL(url.href);
    target.hash = '';
    try {
      return await request(target, {
        method: 'GET',
        dispatcher: this.dispatcher,
        signal,
        headers: { 'user-agent': this.userAgent, accept: ACCEPT, 'accept-encoding': 'gzip, deflate, br' },
      });
    } catch (err) {
      if (err instanceof BlockedAddressError) {
        throw new WebFetchError('blocked_address', `Refused: ${url.href} resolves to ${describeVerdict(err.verdict)}${from}`, {
          url: url.href,
          range: err.verdict.range,
          address: err.verdict.address,
        });
      }
      throw err;
    }
  }

  private async readResponse(
    start: URL,
    current: URL,
    res: Dispatcher.ResponseData,
    redirects: string[],
    signal: AbortSignal,
  ): Promise<FetchedResource> {
    const base = { url: start.href, finalUrl: current.href, status: res.statusCode, redirects };
    if (res.statusCode === 429) {
      discardBody(res.body);
      const retryAfter = res.headers['retry-after'];
      throw new WebFetchError('rate_limited', `HTTP 429 Too Many Requests from ${current.host}`, { ...base, retryAfter });
    }
    const { mime, charset } = parseContentType(res.headers['content-type']);
    let kind = mime ? contentKindOf(mime) : null;
    if (mime && !kind) {
      discardBody(res.body);
      // An error page in a binary type: the status is what matters, so keep it.
      if (res.statusCode >= 400) return { ...base, contentType: mime, kind: 'text', body: '', truncated: false };
      throw new WebFetchError(
        'unsupported_content',
        `Unsupported content type ${mime} at ${current.href}: only HTML, plain text, Markdown, XML and JSON pages can be read`,
        { ...base, contentType: mime },
      );
    }
    const decoder = decoderFor(res.headers['content-encoding']);
    if (decoder === 'unsupported') {
      discardBody(res.body);
      const encoding = String(res.headers['content-encoding']);
      throw new WebFetchError('unsupported_content', `Unsupported content encoding ${encoding} at ${current.href}`, base);
    }
    const { bytes, truncated } = await readCapped(res.body as unknown as Readable, decoder, this.maxBytes, signal);
    kind ??= sniffContentKind(bytes);
    if (!kind) {
      throw new WebFetchError('unsupported_content', `Unsupported content at ${current.href}: no Content-Type and the body is binary`, base);
    }
    return { ...base, contentType: mime, kind, body: decodeBody(bytes, kind, charset), truncated };
  }

  /** Parses and checks one URL (the first or a redirect target) before any connection. */
  private checkUrl(raw: string, base?: URL, start?: URL): URL {
    const from = base ? ` (redirected from ${start?.href ?? base.href})` : '';
    let url: URL;
    try {
      url = new URL(raw, base);
    } catch {
      throw new WebFetchError('invalid_url', `Invalid URL: ${JSON.stringify(raw)}${from}; give an absolute http(s) URL`, { url: raw });
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      throw new WebFetchError('unsupported_scheme', `Refused: ${url.protocol} URLs are not fetched${from}; only http and https`, {
        url: url.href,
      });
    }
    if (url.username || url.password) {
      throw new WebFetchError('credentials_in_url', `Refused: URLs with credentials (user:password@) are not fetched${from}`, {
        url: `${url.protocol}//${url.host}${url.pathname}`,
      });
    }
    const port = Number(url.port) || (url.protocol === 'https:' ? 443 : 80);
    const early = this.policy.isAllowListed(url.hostname, port) ? null : this.policy.checkHost(url.hostname);
    if (early && !early.allowed) {
      throw new WebFetchError('blocked_address', `Refused: ${url.href} resolves to ${describeVerdict(early)}${from}`, {
        url: url.href,
        range: early.range,
        address: early.address,
      });
    }
    return url;
  }

  private classify(err: unknown, url: string): WebFetchError {
    if (err instanceof WebFetchError) return err;
    const e = err as { code?: string; message?: string; cause?: { code?: string; message?: string } };
    if (err instanceof undiciErrors.HeadersTimeoutError || err instanceof undiciErrors.BodyTimeoutError) {
      return new WebFetchError('timeout', `Timed out fetching ${url}: ${e.message}`, { url });
    }
    const code = e.code ?? e.cause?.code;
    const message = e.message ?? String(err);
    return new WebFetchError('network', `Could not fetch ${url}: ${message}`, { url, code });
  }
}
