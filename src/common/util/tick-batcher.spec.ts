import { TickBatcher } from './tick-batcher';

const tick = () => new Promise((r) => setImmediate(r));

describe('TickBatcher', () => {
  it('flushes what one tick handed over together, one flush at a time, what came meanwhile in the next, `take` at most', async () => {
    const flushed: number[][] = [];
    let release: () => void = () => undefined;
    const b = new TickBatcher<number>(
      (batch) => {
        flushed.push(batch);
        return new Promise<void>((r) => (release = r));
      },
      (q) => Math.min(q.length, 3),
    );
    [1, 2, 3, 4].forEach((n) => b.add(n));
    expect(flushed).toEqual([]); // nothing before the next tick
    await tick();
    expect(flushed).toEqual([[1, 2, 3]]);
    b.add(5);
    await tick();
    expect(flushed).toHaveLength(1); // the first flush is still in flight
    release();
    await tick();
    expect(flushed).toEqual([[1, 2, 3], [4, 5]]);
    release();
    await tick();
    b.add(6);
    await tick();
    expect(flushed.at(-1)).toEqual([6]);
    release();
  });
});
