import { fuse } from './rank-fusion.util';

const names = (...n: string[]) => n.map((name) => ({ name }));

describe('fuse (reciprocal rank fusion)', () => {
  it('puts a tool first in both rankings at 1 and keeps scores in 0..1', () => {
    const out = fuse(names('a', 'b', 'c'), names('a', 'c', 'd'));
    expect(out[0]).toEqual({ name: 'a', score: 1 });
    for (const h of out) {
      expect(h.score).toBeGreaterThan(0);
      expect(h.score).toBeLessThanOrEqual(1);
    }
    expect(out.map((h) => h.name)).toEqual(['a', 'c', 'b', 'd']);
  });

  it('ranks agreement above a single high rank', () => {
    const out = fuse(names('x', 'shared'), names('y', 'shared'));
    expect(out[0].name).toBe('shared');
  });

  it('honours weights and breaks ties by name', () => {
    expect(fuse(names('b'), names('a'))[0].name).toBe('a');
    expect(fuse(names('b'), names('a'), { bm25Weight: 2 })[0].name).toBe('b');
  });

  it('counts a repeated name once, at its best rank, and handles empty rankings', () => {
    const out = fuse(names('a', 'a', 'b'), []);
    expect(out.map((h) => h.name)).toEqual(['a', 'b']);
    expect(fuse([], [])).toEqual([]);
  });
});
