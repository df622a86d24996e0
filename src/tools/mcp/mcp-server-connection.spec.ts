import { backoffDelay } from './mcp-server-connection';

describe('backoffDelay', () => {
  it('doubles from the initial delay up to the cap, jittered within the upper half', () => {
    const low = (attempt: number) => backoffDelay(attempt, 500, 30_000, () => 0);
    const high = (attempt: number) => backoffDelay(attempt, 500, 30_000, () => 1);
    expect([0, 1, 2, 3, 4, 5, 6, 7, 40].map(high)).toEqual([500, 1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000]);
    expect([0, 1, 6, 40].map(low)).toEqual([250, 500, 15000, 15000]);
    for (let i = 0; i < 100; i++) {
      const d = backoffDelay(3, 500, 30_000);
      expect(d).toBeGreaterThanOrEqual(2000);
      expect(d).toBeLessThanOrEqual(4000);
    }
  });
});
