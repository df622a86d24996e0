import { retryDelayMs } from './retry-schedule';

describe('webhook retry schedule', () => {
  it('grows fourfold from the base, with at most ±20% jitter', () => {
    expect([1, 2, 3].map((n) => retryDelayMs(n, 10_000, 0.5))).toEqual([10_000, 40_000, 160_000]);
    expect(retryDelayMs(2, 10_000, 0)).toBe(32_000);
    expect(retryDelayMs(2, 10_000, 0.999999)).toBeLessThanOrEqual(48_000);
  });

  it('the defaults (7 tries, 10 s base) spread at least 5 tries over more than an hour, even with the shortest jitter', () => {
    const tries = 7;
    let at = 0;
    const times = [0];
    for (let n = 1; n < tries; n++) times.push((at += retryDelayMs(n, 10_000, 0)));
    expect(times.length).toBeGreaterThanOrEqual(5);
    expect(times.at(-1)!).toBeGreaterThan(3_600_000);
  });
});
