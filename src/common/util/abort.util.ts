/** AbortSignal helpers: one signal per run, merged with per-request and per-tool timeouts. */

/** An AbortSignal that fires when any input fires (undefined inputs are ignored). */
export function anySignal(...signals: Array<AbortSignal | undefined>): AbortSignal {
  const present = signals.filter((s): s is AbortSignal => !!s);
  return present.length === 1 ? present[0] : AbortSignal.any(present);
}

/** Resolves after `ms`, or rejects with the signal's reason as soon as it aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(abortReason(signal));
    const t = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(t);
      reject(abortReason(signal!));
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

export function abortReason(signal: AbortSignal): Error {
  const r = signal.reason;
  if (r instanceof Error) return r;
  const e = new Error(typeof r === 'string' ? r : 'The operation was aborted');
  e.name = 'AbortError';
  return e;
}

export function isAbortError(err: unknown): boolean {
  const name = (err as { name?: string })?.name;
  return name === 'AbortError' || name === 'APIUserAbortError' || name === 'TimeoutError';
}

/** What ended a {@link Deadline} first: the caller's signal, the time limit, or the owner's own `abort()`. */
export type DeadlineCause = 'aborted' | 'timeout' | 'stopped';

export interface DeadlineOptions {
  /** the abort reason per cause (default: the caller's reason; a `TimeoutError`; an `AbortError`) */
  reason?: (cause: DeadlineCause) => unknown;
  /** let the process exit while the timer is pending (the timer is cleared by `dispose()` anyway) */
  unref?: boolean;
}

/**
 * A caller's signal merged with a time limit (and the owner's own stop), remembering which fired
 * first. Always `dispose()` it in a `finally`: that clears the timer and the listener on the
 * caller's signal at once.
 *
 * Not `AbortSignal.any([parent, AbortSignal.timeout(ms)])`: a platform timeout cannot be
 * cleared, so every call that ends early leaves its timer and signal alive until the limit
 * passes (measured on Node 20: 100k calls finishing at once with a 30 s limit kept 115 MB
 * alive for `AbortSignal.timeout` alone and 240 MB with `AbortSignal.any`, against 0.1 MB
 * when disposed), and it cannot tell a timeout from the caller's own `TimeoutError`.
 */
export interface Deadline {
  /** aborts on the first cause; hand it to the work */
  readonly signal: AbortSignal;
  /** the cause that fired first; undefined while none has */
  readonly cause: DeadlineCause | undefined;
  /** the time limit fired first */
  readonly timedOut: boolean;
  /** the owner's own stop (cause `stopped`); ignored once a cause fired */
  abort(reason?: unknown): void;
  /** `work`'s outcome, or a rejection with the signal's reason (as an Error) as soon as it aborts */
  race<T>(work: PromiseLike<T>): Promise<T>;
  /** clears the timer and stops following the caller's signal; idempotent */
  dispose(): void;
}

/**
 * `deadline(parent, ms)`: see {@link Deadline}. Without `ms` (or with a non-finite one) it only
 * follows `parent` and the owner's `abort()`; with an already aborted `parent` it starts aborted.
 */
export function deadline(parent: AbortSignal | undefined, ms?: number, options: DeadlineOptions = {}): Deadline {
  const controller = new AbortController();
  let cause: DeadlineCause | undefined;
  let timer: NodeJS.Timeout | undefined;
  const fire = (c: DeadlineCause, given?: unknown) => {
    if (cause) return;
    cause = c;
    controller.abort(given !== undefined ? given : reasonFor(c, parent, options));
  };
  // one listener rather than AbortSignal.any(): removed by dispose(), nothing left behind
  const onParentAbort = () => fire('aborted');
  const dispose = () => {
    clearTimeout(timer);
    timer = undefined;
    parent?.removeEventListener('abort', onParentAbort);
  };
  if (parent?.aborted) fire('aborted');
  else {
    parent?.addEventListener('abort', onParentAbort, { once: true });
    if (ms !== undefined && Number.isFinite(ms)) {
      timer = setTimeout(() => fire('timeout'), Math.max(0, ms));
      if (options.unref) timer.unref?.();
    }
  }
  return {
    signal: controller.signal,
    get cause() {
      return cause;
    },
    get timedOut() {
      return cause === 'timeout';
    },
    abort: (reason?: unknown) => fire('stopped', reason),
    race: <T>(work: PromiseLike<T>) => raceSignal(work, controller.signal),
    dispose,
  };
}

/**
 * `work`'s value, or `fallback` once `ms` passed; the timer is cleared either way. A rejection of
 * `work` before the limit rejects; one after it is ignored (never an unhandled rejection).
 */
export async function withTimeout<T, F>(work: PromiseLike<T>, ms: number, fallback: F): Promise<T | F> {
  let timer: NodeJS.Timeout | undefined;
  const limit = new Promise<F>((resolve) => {
    timer = setTimeout(() => resolve(fallback), ms);
  });
  try {
    return await Promise.race([work, limit]);
  } finally {
    clearTimeout(timer);
  }
}

function reasonFor(cause: DeadlineCause, parent: AbortSignal | undefined, options: DeadlineOptions): unknown {
  if (options.reason) return options.reason(cause);
  if (cause === 'aborted') return parent?.reason;
  const e = new Error(cause === 'timeout' ? 'The operation timed out' : 'The operation was aborted');
  e.name = cause === 'timeout' ? 'TimeoutError' : 'AbortError';
  return e;
}

/** Settles like `work`, or rejects as soon as `signal` aborts; the listener is removed when either happens. */
function raceSignal<T>(work: PromiseLike<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(abortReason(signal));
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(abortReason(signal));
    signal.addEventListener('abort', onAbort, { once: true });
    const done = () => signal.removeEventListener('abort', onAbort);
    Promise.resolve(work).then(
      (v) => {
        done();
        resolve(v);
      },
      (e: unknown) => {
        done();
        reject(e);
      },
    );
  });
}
