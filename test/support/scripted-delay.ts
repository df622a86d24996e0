/**
 * A delay that is part of the behaviour under test: a scripted model that is deliberately slow, a
 * server or client that stalls, an operation made to outlast a timeout. It is never a way to wait
 * for something to happen (use waitFor or await the event for that); keeping such delays behind
 * this name lets test/lint/no-fixed-sleeps.spec.ts tell them apart from waits.
 * Resolves early, without throwing, when `signal` aborts.
 */
export function scriptedDelay(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise<void>((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}
