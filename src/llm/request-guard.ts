import { deadline, type Deadline, type DeadlineCause } from '../common/util/abort.util';
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
 * timers; call it in a `finally`. The first two are the shared `deadline()`; the idle timer is
 * the guard's own.
 */
export class RequestGuard {
  /** the caller's signal and the overall timeout; the idle timeout fires it as the owner's stop */
  private readonly deadline: Deadline;
  private idleTimer: NodeJS.Timeout | undefined;
  /** between armIdle and disarmIdle: the idle timer firing then is a stall */
  private waiting = false;
  /** Rejects when the guard fires (with the signal's reason). */
  readonly fired: Promise<never>;

  constructor(private readonly options: RequestGuardOptions) {
    this.deadline = deadline(options.signal, options.timeoutMs, {
      unref: true,
      reason: (cause) => guardError(CAUSES[cause]),
    });
    const signal = this.deadline.signal;
    this.fired = signal.aborted
      ? Promise.reject(signal.reason)
      : new Promise<never>((_, reject) => {
          signal.addEventListener('abort', () => reject(signal.reason), { once: true });
        });
    this.fired.catch(() => undefined); // observed by whoever races it; never an unhandled rejection
  }

  /** Aborts on any of the causes; pass it to fetch / the SDK. */
  get signal(): AbortSignal {
    return this.deadline.signal;
  }

  /** Which cause fired, if any. */
  get cause(): GuardCause | undefined {
    const cause = this.deadline.cause;
    return cause ? CAUSES[cause] : undefined;
  }

  /**
   * Starts (or restarts) the idle timer before waiting for the next chunk. It only runs while
   * we wait on the server: time a slow consumer spends between two pulls is not server silence.
   */
  armIdle(): void {
    const ms = this.options.idleTimeoutMs;
    if (!ms || this.deadline.cause) return;
    this.waiting = true;
    // one timer per request, restarted per wait: a new timer per chunk was an allocation and a
    // timer-list insertion for every chunk of every stream
    if (this.idleTimer) this.idleTimer.refresh();
    else {
      this.idleTimer = setTimeout(() => {
        if (this.waiting) this.deadline.abort();
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
    switch (this.cause) {
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
    this.deadline.dispose();
    if (this.idleTimer) clearTimeout(this.idleTimer);
  }
}

/** The deadline's causes as the guard names them: its own stop is the idle timeout. */
const CAUSES: Record<DeadlineCause, GuardCause> = { aborted: 'aborted', timeout: 'timeout', stopped: 'idle_timeout' };

function guardError(cause: GuardCause): Error {
  const err = new Error(`LLM request ${cause}`);
  err.name = 'AbortError';
  return err;
}
