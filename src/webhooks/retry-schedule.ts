/**
 * When a failed try is tried again: exponential backoff with jitter. The delay after try `n`
 * (1-based) is base × 4^(n−1), times a random factor in [0.8, 1.2), so receivers that failed
 * together are not all tried again in the same instant. With the defaults (10 s base, 7 tries)
 * the tries fall at about 0, 10 s, 50 s, 3.5 min, 14 min, 57 min and 3.8 h after the event.
 */
export const RETRY_FACTOR = 4;
export const RETRY_JITTER = 0.2;

/** Milliseconds to wait after the `attempt`-th try failed; `random` in [0, 1). */
export function retryDelayMs(attempt: number, baseMs: number, random: number = Math.random()): number {
  const jitter = 1 - RETRY_JITTER + 2 * RETRY_JITTER * random;
  return Math.round(baseMs * RETRY_FACTOR ** (attempt - 1) * jitter);
}
