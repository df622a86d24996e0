/**
 * Fusing ranked lists of names. Both are a few lines over Maps, so no package is pulled in
 * for them.
 */

/**
 * Round-robin with de-duplication: the first of every list, then the second of every list,
 * and so on, skipping names already taken, until `k` names are taken or the lists run out.
 * The order of `lists` breaks ties within a round, so the list that matters most goes first.
 */
export function roundRobin(lists: ReadonlyArray<readonly string[]>, k: number): string[] {
  const out: string[] = [];
  const seen = new Set<string>();
  const depth = Math.max(0, ...lists.map((l) => l.length));
  for (let rank = 0; rank < depth && out.length < k; rank++) {
    for (const list of lists) {
      const name = list[rank];
      if (name === undefined || seen.has(name)) continue;
      seen.add(name);
      out.push(name);
      if (out.length >= k) break;
    }
  }
  return out;
}

/**
 * Reciprocal-rank fusion: each list adds weight / (c + rank) (rank from 1) to a name; the
 * names with the highest sums come first, ties by first appearance. c = 60 is the usual
 * constant; `weights` defaults to 1 per list.
 */
export function reciprocalRank(lists: ReadonlyArray<readonly string[]>, k: number, c = 60, weights?: readonly number[]): string[] {
  const score = new Map<string, number>();
  lists.forEach((list, i) => {
    const w = weights?.[i] ?? 1;
    list.forEach((name, rank) => score.set(name, (score.get(name) ?? 0) + w / (c + rank + 1)));
  });
  return [...score.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, Math.max(0, k))
    .map(([name]) => name);
}
