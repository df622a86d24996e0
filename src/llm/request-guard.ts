import type { LlmErrorInfo } from './llm-adapter.port';

/** Why a guarded request was cut: the caller aborted, the whole request took too long, or the stream went silent. */
export type GuardCause = 'aborted' | 'timeout' | 'idle_timeout';

export interface RequestGuardOptions {
  /** the caller's signal (run cancellation, client disconnect) */
  signal?: AbortSignal;
  /** LLM_TIMEOUT_MS: the whole request, back-off included */
  timeoutMs: number;
  /** LLM_IDLE_TIMEOUT_MS: longest wait for the next chunk; armed around each read by `armIdle()` */
  idleTimeoutMs?: number;
}

/**
 * One AbortSignal per LLM request that fires on the first of: the caller's signal, the overall
 * timeout, the idle timeout. It remembers which one fired, so the adapter can report
 * `aborted`, `timeout` or `idle_timeout` instead of a bare AbortError. `dispose()` clears the
 * timers; call it in a `finally`.
 */
export class RequestGuard {
  private readonly controller = new AbortController();
  private readonly overallTimer: NodeJS.Timeout;
  private idleTimer: NodeJS.Timeout | undefined;
  /** between armIdle and disarmIdle: the idle timer firing then is a stall */
  private waiting = false;
  private firedCause: GuardCause | undefined;
  private readonly onCallerAbort = () => this.fire('aborted');
  /** Rejects when the guard fires (with the signal's reason). */
  readonly fired: Promise<never>;

  constructor(private readonly options: RequestGuardOptions) {
    this.fired = new Promise<never>((_, reject) => {
      this.controller.signal.addEventListener('abort', () => reject(this.controller.signal.reason), { once: true });
    });
    this.fired.catch(() => undefined); // observed by whoever races it; never an unhandled rejection
    this.overallTimer = setTimeout(() => this.fire('timeout'), options.timeoutMs);
    this.overallTimer.unref?.();
    if (options.signal?.aborted) this.fire('aborted');
    else options.signal?.addEventListener('abort', this.onCallerAbort, { once: true });
  }

  /** Aborts on any of the causes; pass it to fetch / the SDK. */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** Which cause fired, if any. */
  get cause(): GuardCause | undefined {
    return this.firedCause;
  }

  /**
   * Starts (or restarts) the idle timer before waiting for the next chunk. It only runs while
   * we wait on the server: time a slow consumer spends between two pulls is not server silence.
   */
  armIdle(): void {
    const ms = this.options.idleTimeoutMs;
    if (!ms || this.firedCause) return;
    this.waiting = true;
    // one timer per request, restarted per wait: a new timer per chunk was an allocation and a
    // timer-list insertion for every chunk of every stream
    if (this.idleTimer) this.idleTimer.refresh();
    else {
      this.idleTimer = setTimeout(() => {
        if (this.waiting) this.fire('idle_timeout');
      }, ms);
      this.idleTimer.unref?.();
    }
  }

  /** A chunk arrived: the idle timer no longer counts until the next wait (armIdle restarts it). */
  disarmIdle(): void {
    this.waiting = false;
  }

  /** The error to report for the cause that fired (undefined while nothing fired). */
  errorInfo(): LlmErrorInfo | undefined {
    switch (this.firedCause) {
      case 'aborted':
        return { code: 'aborted', message: 'The LLM request was aborted', retryable: false };
      case 'timeout':
        return { code: 'timeout', message: `The LLM request took longer than ${this.options.timeoutMs} ms`, retryable: true };
      case 'idle_timeout':
        return { code: 'idle_timeout', message: `The LLM stream sent nothing for ${this.options.idleTimeoutMs} ms`, retryable: true };
      default:
        return undefined;
    }
  }

  dispose(): void {
    clearTimeout(this.overallTimer);
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.options.signal?.removeEventListener('abort', this.onCallerAbort);
  }

  private fire(cause: GuardCause): void {
    if (this.firedCause) return;
    this.firedCause = cause;
    const err = new Error(`LLM request ${cause}`);
    err.name = 'AbortError';
    this.controller.abort(err);
  }
}
