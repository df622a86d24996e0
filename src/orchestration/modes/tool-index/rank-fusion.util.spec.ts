import { reciprocalRank, roundRobin } from './rank-fusion.util';

describe('roundRobin', () => {
  it('takes every list’s first before any list’s second, skipping repeats', () => {
    expect(roundRobin([['a', 'b', 'c'], ['b', 'd'], ['e']], 5)).toEqual(['a', 'b', 'e', 'd', 'c']);
  });
  it('stops at k and when the lists run out', () => {
    expect(roundRobin([['a', 'b'], ['c']], 2)).toEqual(['a', 'c']);
    expect(roundRobin([['a'], []], 5)).toEqual(['a']);
    expect(roundRobin([], 3)).toEqual([]);
  });
});

describe('reciprocalRank', () => {
  it('ranks a name found high in several lists above one found in a single list', () => {
    expect(reciprocalRank([['a', 'b'], ['c', 'b']], 3)).toEqual(['b', 'a', 'c']);
  });
  it('weights lists', () => {
    expect(reciprocalRank([['a'], ['c']], 2, 60, [1, 2])).toEqual(['c', 'a']);
  });
});
