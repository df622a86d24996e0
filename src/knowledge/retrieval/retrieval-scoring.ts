import type { RetrievalConfidence } from '../knowledge-retriever.port';

/** A full-text candidate as the repository finds it. */
export interface TextHit {
  id: string;
  /** ts_rank_cd(tsv, query, 1): cover density, title 'A' (1.0) and content 'B' (0.4), divided by 1 + log(length) */
  rank: number;
  /** distinct query lexemes the chunk contains */
  matched: number;
  /** distinct lexemes in the query (after stemming and stop words) */
  terms: number;
}

export interface VectorHit {
  id: string;
  /** cosine similarity, -1..1 */
  similarity: number;
}

export interface ScoredHit {
  id: string;
  /** 0..1 */
  score: number;
  /** full-text score of the chunk (0 when only the vector search found it) */
  textScore: number;
  confidence: Exclude<RetrievalConfidence, 'none'>;
}

/**
 * Rank at which a chunk's full-text strength is one half. Calibrated on the test corpus
 * (test/medium/knowledge-retrieval.medium-spec.ts), where ts_rank_cd with length normalization
 * gives about 0.7–1.4 to a chunk whose title holds the query's words, 0.3–0.5 to one that holds
 * them all in its text, and 0.1–0.25 to a passing mention. With 0.4, a passing mention of every
 * query term lands in `medium`, a prominent one in `high`.
 */
export const TEXT_RANK_HALF = 0.4;

/**
 * Confidence levels of a score (every returned source has one; a result with no sources is
 * `none`):
 * - high   ≥ 0.70: the chunk holds (nearly) every term of the question, prominently (in its title
 *   or repeatedly);
 * - medium ≥ 0.45: it holds most terms, or all of them in passing;
 * - low    otherwise: it holds some of the terms, or was found by vector similarity alone.
 */
export const CONFIDENCE_THRESHOLDS = { high: 0.7, medium: 0.45 } as const;

/**
 * Reciprocal rank fusion constant (Cormack, Clarke & Büttcher, SIGIR 2009): 60. It keeps a
 * candidate that only one ranking found behind one that both rankings found near the top.
 */
export const RRF_K = 60;

/**
 * Full-text score of a chunk, 0..1: coverage × (0.5 + 0.5 × strength), where coverage is the
 * share of the query's terms the chunk contains and strength = rank / (rank + TEXT_RANK_HALF).
 * Coverage dominates on purpose: a question's answer usually contains most of its words,
 * while ts_rank_cd alone favours a chunk that repeats one common word.
 */
export function textScore(hit: Pick<TextHit, 'rank' | 'matched' | 'terms'>): number {
  if (hit.terms <= 0 || hit.matched <= 0) return 0;
  const coverage = Math.min(1, hit.matched / hit.terms);
  const rank = Math.max(0, hit.rank);
  const strength = rank / (rank + TEXT_RANK_HALF);
  return coverage * (0.5 + 0.5 * strength);
}

export function confidenceOf(score: number): Exclude<RetrievalConfidence, 'none'> {
  if (score >= CONFIDENCE_THRESHOLDS.high) return 'high';
  if (score >= CONFIDENCE_THRESHOLDS.medium) return 'medium';
  return 'low';
}

/** The best of several confidences; `none` when there are none. */
export function bestConfidence(levels: readonly RetrievalConfidence[]): RetrievalConfidence {
  const order: RetrievalConfidence[] = ['high', 'medium', 'low'];
  return order.find((l) => levels.includes(l)) ?? 'none';
}

/** Full-text only: candidates by textScore (ties: higher rank, then id), score = textScore. */
export function rankText(hits: readonly TextHit[]): ScoredHit[] {
  return hits
    .map((h) => ({ hit: h, s: textScore(h) }))
    .sort((a, b) => b.s - a.s || b.hit.rank - a.hit.rank || cmp(a.hit.id, b.hit.id))
    .map(({ hit, s }) => ({ id: hit.id, score: s, textScore: s, confidence: confidenceOf(s) }));
}

/**
 * Full-text fused with vector similarity by reciprocal rank:
 * score = Σ 1 / (RRF_K + rank_r) over the two rankings that hold the chunk, divided by the best
 * possible sum (first in both), so 1 means "first in both" and a chunk first in one ranking
 * only scores about 0.5. Ranks are fused, not raw scores, so ts_rank_cd and cosine never need
 * calibrating against each other.
 *
 * Confidence stays lexical: a chunk gets the confidence of its full-text score, and one the
 * vector search alone found is `low`. Nearest neighbours exist for any question, even one the
 * corpus cannot answer, and cosine scales differ between models, so similarity alone is not
 * taken as evidence the answer is there.
 */
export function fuseTextAndVector(textHits: readonly TextHit[], vectorHits: readonly VectorHit[]): ScoredHit[] {
  const text = rankText(textHits);
  const vector = [...vectorHits].sort((a, b) => b.similarity - a.similarity || cmp(a.id, b.id));
  const best = 2 / (RRF_K + 1);
  const fused = new Map<string, { rrf: number; textScore: number }>();
  const add = (id: string, rank: number, ts: number) => {
    const e = fused.get(id) ?? { rrf: 0, textScore: 0 };
    e.rrf += 1 / (RRF_K + rank);
    e.textScore = Math.max(e.textScore, ts);
    fused.set(id, e);
  };
  text.forEach((h, i) => add(h.id, i + 1, h.textScore));
  const seen = new Set<string>();
  vector.forEach((h, i) => {
    if (seen.has(h.id)) return;
    seen.add(h.id);
    add(h.id, i + 1, 0);
  });
  return [...fused.entries()]
    .map(([id, e]) => ({ id, score: e.rrf / best, textScore: e.textScore, confidence: e.textScore > 0 ? confidenceOf(e.textScore) : ('low' as const) }))
    .sort((a, b) => b.score - a.score || b.textScore - a.textScore || cmp(a.id, b.id));
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
