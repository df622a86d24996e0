/** One entry of a ranking, best first; only the order matters to fusion. */
export interface RankedName {
  name: string;
}

/** A fused candidate: `score` is 0..1 (1 = first in every ranking, weights included). */
export interface FusedHit {
  name: string;
  score: number;
}

export interface FuseOptions {
  /**
   * RRF's rank constant: 60 as in Cormack, Clarke & Büttcher (SIGIR 2009, "Reciprocal Rank
   * Fusion outperforms Condorcet and individual rank learning methods"); smaller values let
   * the first few ranks dominate.
   */
  k?: number;
  /** weight of the BM25 ranking (default 1) */
  bm25Weight?: number;
  /** weight of the vector ranking (default 1) */
  vectorWeight?: number;
}

/**
 * Reciprocal rank fusion of a BM25 ranking and a vector ranking:
 * score(t) = Σ weight_r / (k + rank_r(t)), rank from 1, summed over the rankings that hold t.
 * Scores are divided by the best possible sum (rank 1 in both), so they stay in 0..1 like the
 * index's own scores. Ranks, not raw scores, are fused: BM25 and cosine scales never have to
 * be calibrated against each other. Ties are broken by name. A name repeated within one
 * ranking counts at its best rank.
 */
export function fuse(bm25Ranked: readonly RankedName[], vectorRanked: readonly RankedName[], options: FuseOptions = {}): FusedHit[] {
  const k = options.k ?? 60;
  const weights = [options.bm25Weight ?? 1, options.vectorWeight ?? 1];
  const best = weights.reduce((sum, w) => sum + w / (k + 1), 0);
  const scores = new Map<string, number>();
  [bm25Ranked, vectorRanked].forEach((ranking, r) => {
    const seen = new Set<string>();
    ranking.forEach(({ name }, i) => {
      if (seen.has(name)) return;
      seen.add(name);
      scores.set(name, (scores.get(name) ?? 0) + weights[r] / (k + i + 1));
    });
  });
  return [...scores.entries()]
    .map(([name, s]) => ({ name, score: best > 0 ? s / best : 0 }))
    .sort((a, b) => b.score - a.score || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}
