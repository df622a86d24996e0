import { retentionBounds, runBatches } from './storage-batches';

describe('retentionBounds', () => {
  it('nothing expires when neither the deployment nor a project sets a value', () => {
    expect(retentionBounds(null, [])).toBeNull();
    expect(retentionBounds(null, [null, -1])).toBeNull();
  });

  it('the deployment value, and the smallest of it and every project’s own', () => {
    expect(retentionBounds(90_000, [])).toEqual({ deploymentMs: 90_000, minMs: 90_000 });
    expect(retentionBounds(90_000, [5000, null, -1])).toEqual({ deploymentMs: 90_000, minMs: 5000 });
  });

  it('a project may set a value where the deployment keeps for ever (-1 goes to the statement)', () => {
    expect(retentionBounds(null, [null, 60_000])).toEqual({ deploymentMs: -1, minMs: 60_000 });
  });
});

describe('runBatches', () => {
  const noPause = () => Promise.resolve();

  it('runs batches until one is not full', async () => {
    const sizes = [3, 3, 1, 3];
    const r = await runBatches(() => Promise.resolve(sizes.shift()), 3, { maxBatches: 10, stopped: () => false, pause: noPause });
    expect(r).toEqual({ end: 'done', batches: 3, rows: 7 });
    expect(sizes).toEqual([3]);
  });

  it('stops when another instance holds the lock, without counting that batch', async () => {
    const sizes = [3, undefined, 3];
    expect(await runBatches(() => Promise.resolve(sizes.shift()), 3, { maxBatches: 10, stopped: () => false, pause: noPause })).toEqual({ end: 'locked', batches: 1, rows: 3 });
  });

  it('is bounded: at most maxBatches per pass, and none after a stop', async () => {
    let calls = 0;
    const full = () => Promise.resolve(++calls && 5);
    expect(await runBatches(full, 5, { maxBatches: 4, stopped: () => false, pause: noPause })).toEqual({ end: 'limit', batches: 4, rows: 20 });
    let stop = false;
    calls = 0;
    const stopAfterTwo = () => Promise.resolve((++calls === 2 && (stop = true), 5));
    expect(await runBatches(stopAfterTwo, 5, { maxBatches: 100, stopped: () => stop, pause: noPause })).toEqual({ end: 'stopped', batches: 2, rows: 10 });
  });

  it('lets the event loop go between batches', async () => {
    const order: string[] = [];
    const sizes = [2, 2, 0];
    const running = runBatches(() => (order.push('batch'), Promise.resolve(sizes.shift())), 2, { maxBatches: 10, stopped: () => false });
    setImmediate(() => order.push('other'));
    await running;
    expect(order.indexOf('other')).toBeLessThan(order.lastIndexOf('batch'));
  });
});
