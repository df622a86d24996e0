/**
 * How long a broken stream keeps trying to reconnect, and how far apart its tries are. A run
 * outlives the death of its instance (another instance takes it over once its lease has expired
 * and a sweep has seen it: up to `RUN_LEASE_MS` + `RUN_LEASE_MS` / 2, 45 s with the defaults),
 * so the budget must outlast that, and the tries must thin out so a restarting service is not
 * hammered meanwhile.
 */
export interface ReconnectOptions {
  /**
   * how long after its connection broke the stream keeps trying (default 120 000 ms); an event
   * received starts it again. A wait that would end past it is cut short: the last try comes
   * at its end.
   */
  budgetMs?: number;
  /** the wait before the first try after a break (default 250 ms); each try in a row doubles it */
  delayMs?: number;
  /** the longest wait between two tries (default 5 000 ms) */
  maxDelayMs?: number;
  /** at most this many tries in a row, whatever is left of the budget (default: no limit but the budget) */
  retries?: number;
}

export const RECONNECT_DEFAULTS = { budgetMs: 120_000, delayMs: 250, maxDelayMs: 5_000, retries: Number.POSITIVE_INFINITY } as const;

/** No reconnection at all (`reconnect: false`). */
const NEVER = { budgetMs: 0, delayMs: 0, maxDelayMs: 0, retries: 0 } as const;

/** The tries in a row since the stream last got an event: when to make the next one, or that none is left. */
export class Backoff {
  private readonly options: Required<ReconnectOptions>;
  private tries = 0;
  private since: number | null = null;
  /** the server's `retry:` field (the reconnection time SSE defines), the least a wait may be */
  private serverRetryMs = 0;

  constructor(options: ReconnectOptions | false | undefined, private readonly random: () => number = Math.random) {
    this.options = options === false ? { ...NEVER } : { ...RECONNECT_DEFAULTS, ...options };
  }

  /** An event arrived: the connection works, the next break starts over. */
  reset(): void {
    this.tries = 0;
    this.since = null;
  }

  /** The server asked, with `retry: <ms>`, for its clients to wait that long before they reconnect. */
  serverRetry(ms: number): void {
    if (Number.isFinite(ms) && ms >= 0) this.serverRetryMs = ms;
  }

  /**
   * The wait before the next try, or undefined when no try is left (the tries in a row or the
   * budget are used up). `atLeastMs`: a wait the last answer asked for (`Retry-After`).
   */
  next(now: number, atLeastMs = 0): number | undefined {
    this.since ??= now;
    if (this.tries >= this.options.retries) return undefined;
    const left = this.since + this.options.budgetMs - now;
    if (left <= 0) return undefined;
    const floor = Math.max(this.options.delayMs, this.serverRetryMs);
    const ceiling = Math.max(floor, this.options.maxDelayMs);
    const exp = Math.min(ceiling, floor * 2 ** this.tries);
    // jitter: from half the wait to all of it, so clients cut off together do not come back together
    const jittered = exp / 2 + (exp / 2) * this.random();
    this.tries++;
    return Math.min(Math.max(jittered, atLeastMs, this.serverRetryMs), left);
  }
}

/** Waits `ms`, or rejects with the signal's reason as soon as it aborts. */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const done = () => {
      signal.removeEventListener('abort', stop);
      resolve();
    };
    const t = setTimeout(done, ms);
    const stop = () => {
      clearTimeout(t);
      reject(signal.reason);
    };
    signal.addEventListener('abort', stop, { once: true });
  });
}

/** The wait a `Retry-After` header asks for, in ms (seconds or an HTTP date), 0 without one. */
export function retryAfterMs(res: Response, now = Date.now()): number {
  const v = res.headers.get('retry-after');
  if (!v) return 0;
  const s = Number(v);
  if (Number.isFinite(s)) return Math.max(0, s * 1000);
  const at = Date.parse(v);
  return Number.isFinite(at) ? Math.max(0, at - now) : 0;
}
