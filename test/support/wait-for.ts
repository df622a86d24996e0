export interface WaitForOptions {
  /** how long the condition may take before the test fails (default 5 s) */
  timeoutMs?: number;
  /** what is awaited, named in the failure ("the run's row to read cancelled") */
  what?: string;
  /** pause between checks (default 20 ms) */
  intervalMs?: number;
}

/**
 * Polls `condition` until it returns a truthy value and returns that value. This is how tests wait
 * for something they cannot subscribe to (a row, a status, a file): they wait for the thing itself,
 * never for a fixed time. Fails after `timeoutMs` naming `what` and the last error the check threw.
 * This file and scripted-delay.ts are the only test files allowed a Promise-wrapped setTimeout
 * (test/lint/no-fixed-sleeps.spec.ts).
 */
export async function waitFor<T>(condition: () => T | Promise<T>, opts: WaitForOptions = {}): Promise<NonNullable<T>> {
  const { timeoutMs = 5_000, what = 'a condition', intervalMs = 20 } = opts;
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const v = await condition();
      if (v) return v as NonNullable<T>;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() >= deadline) break;
    await new Promise((r) => setTimeout(r, intervalMs));
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${lastError ? ` (last check threw: ${(lastError as Error).message})` : ''}`);
}
