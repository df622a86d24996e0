import { sleep } from '../common/util/abort.util';
import { LlmError, type LlmErrorInfo } from './llm-adapter.port';

/**
 * When and how long to retry an LLM request — shared by every HTTP adapter.
 *
 * Retries happen ONLY before the first byte of a successful response: once a stream has
 * started, its events may already be on their way to a user, and replaying the request would
 * duplicate text or tool calls. So a failure after the first chunk is an `error` event, never a
 * retry. Before that point: 429 (honouring Retry-After), 5xx and connection refused/reset are
 * retried; 4xx such as 400/401/403/404 never are (sending the same request again cannot fix them).
 */
export interface RetryPolicy {
  /** retries after the first attempt (so at most maxRetries + 1 requests) */
  maxRetries: number;
  /** first back-off; doubled on every retry */
  baseDelayMs: number;
  /** largest computed back-off */
  maxDelayMs: number;
  /** a server's Retry-After is obeyed up to this */
  retryAfterCapMs: number;
  /** ± share of random jitter on computed back-offs (never on Retry-After) */
  jitter: number;
}

/**
 * 2 retries at 0.5 s then 1 s (± 20 %): enough to ride out a blip or a restarting server without
 * making a user wait long on a real outage. Retry-After is capped at 30 s because a longer
 * wait inside one chat turn is worse than failing with `rate_limited` and letting the client decide.
 */
export const DEFAULT_RETRY_POLICY: RetryPolicy = {
  maxRetries: 2,
  baseDelayMs: 500,
  maxDelayMs: 8_000,
  retryAfterCapMs: 30_000,
  jitter: 0.2,
};

/** One failed attempt, classified. */
export interface AttemptFailure {
  /** what to report if this is the last attempt */
  info: LlmErrorInfo;
  /** worth another attempt before the first byte */
  retry: boolean;
  /** the server said when to come back (Retry-After / retry-after-ms) */
  retryAfterMs?: number;
}

type HeaderSource = Headers | Record<string, string | string[] | undefined> | undefined | null;

function header(headers: HeaderSource, name: string): string | undefined {
  if (!headers) return undefined;
  if (typeof (headers as Headers).get === 'function') return (headers as Headers).get(name) ?? undefined;
  const rec = headers as Record<string, string | string[] | undefined>;
  const key = Object.keys(rec).find((k) => k.toLowerCase() === name);
  const v = key === undefined ? undefined : rec[key];
  return Array.isArray(v) ? v[0] : v;
}

/**
 * Milliseconds the server asked us to wait: `retry-after-ms` (OpenAI), else `Retry-After` as
 * delay-seconds or an HTTP date. Undefined when absent or unparseable; never negative.
 */
export function parseRetryAfter(headers: HeaderSource, nowMs: number = Date.now()): number | undefined {
  const ms = header(headers, 'retry-after-ms');
  if (ms !== undefined && /^\s*\d+(\.\d+)?\s*$/.test(ms)) return Math.max(0, Number(ms));
  const raw = header(headers, 'retry-after')?.trim();
  if (!raw) return undefined;
  if (/^\d+(\.\d+)?$/.test(raw)) return Math.max(0, Number(raw) * 1000);
  const date = Date.parse(raw);
  return Number.isNaN(date) ? undefined : Math.max(0, date - nowMs);
}

/** Classifies a non-2xx HTTP answer. `message` must already be free of secrets. */
export function classifyStatus(status: number, message: string, headers?: HeaderSource): AttemptFailure {
  const text = `HTTP ${status}${message ? `: ${message}` : ''}`;
  if (status === 429) {
    return { info: { code: 'rate_limited', message: text, retryable: true, status }, retry: true, retryAfterMs: parseRetryAfter(headers) };
  }
  if (status >= 500) {
    return { info: { code: 'server_error', message: text, retryable: true, status }, retry: true, retryAfterMs: parseRetryAfter(headers) };
  }
  if (status === 401 || status === 403) return { info: { code: 'auth', message: text, retryable: false, status }, retry: false };
  return { info: { code: 'bad_request', message: text, retryable: false, status }, retry: false };
}

/** Node/undici error codes of a connection that failed or dropped before any answer: transient. */
const TRANSIENT_CODES = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EAI_AGAIN',
  'ENETUNREACH',
  'EHOSTUNREACH',
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
  'UND_ERR_CONNECT_TIMEOUT',
]);

/**
 * Classifies a thrown connection-level error (fetch's `TypeError: fetch failed`, the SDK's
 * APIConnectionError, a socket error), looking through `cause` chains for the errno code.
 * Undefined when the error is not connection-level.
 */
export function classifyNetworkError(err: unknown): AttemptFailure | undefined {
  const codes: string[] = [];
  const messages: string[] = [];
  let names = '';
  let cur: unknown = err;
  for (let depth = 0; cur && typeof cur === 'object' && depth < 6; depth++) {
    const e = cur as { code?: unknown; name?: unknown; message?: unknown; cause?: unknown };
    if (typeof e.code === 'string') codes.push(e.code);
    if (typeof e.name === 'string') names += ` ${e.name}`;
    if (typeof e.message === 'string' && e.message) messages.push(e.message.replace(/\.$/, ''));
    cur = e.cause;
  }
  const looksNetwork =
    codes.some((c) => c.startsWith('E') || c.startsWith('UND_ERR')) ||
    /APIConnectionError|SocketError|ConnectTimeoutError/.test(names) ||
    messages.some((m) => /fetch failed|other side closed|socket hang up|terminated/i.test(m));
  if (!looksNetwork) return undefined;
  const retry = codes.length === 0 ? true : codes.some((c) => TRANSIENT_CODES.has(c));
  const detail = [...new Set(messages)].join(': ') + (codes.length ? ` (${[...new Set(codes)].join(', ')})` : '');
  return { info: { code: 'network', message: `Connection to the LLM failed: ${detail}`, retryable: true }, retry };
}

/** How long to wait before retry number `retry` (0-based). */
export function backoffDelay(retry: number, failure: AttemptFailure, policy: RetryPolicy, random: () => number = Math.random): number {
  if (failure.retryAfterMs !== undefined) return Math.min(failure.retryAfterMs, policy.retryAfterCapMs);
  const base = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** retry);
  return Math.max(0, Math.round(base * (1 + policy.jitter * (random() * 2 - 1))));
}

export interface WithRetryOptions {
  policy: RetryPolicy;
  /** aborts the back-off sleep too: a cancelled run never waits out a Retry-After */
  signal?: AbortSignal;
  /** called before each back-off (logging) */
  onRetry?: (failure: AttemptFailure, delayMs: number, retry: number) => void;
}

/**
 * Runs `attempt` (which must resolve once the response headers say 2xx, i.e. before the first
 * body byte is consumed) and retries it per the policy. Rethrows an abort as is (the caller knows
 * why its signal fired); unclassified errors are rethrown unchanged; the last classified failure
 * is thrown as an {@link LlmError}.
 */
export async function withRetry<T>(
  attempt: (attemptNumber: number) => Promise<T>,
  classify: (err: unknown) => AttemptFailure | undefined,
  options: WithRetryOptions,
): Promise<T> {
  for (let n = 0; ; n++) {
    try {
      return await attempt(n);
    } catch (err) {
      if (options.signal?.aborted) throw err;
      if (err instanceof LlmError) throw err;
      const failure = classify(err);
      if (!failure) throw err;
      if (!failure.retry || n >= options.policy.maxRetries) throw new LlmError(failure.info);
      const delay = backoffDelay(n, failure, options.policy);
      options.onRetry?.(failure, delay, n + 1);
      await sleep(delay, options.signal);
    }
  }
}
