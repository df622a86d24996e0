import { CONFIDENCE_THRESHOLDS, bestConfidence, confidenceOf, fuseTextAndVector, rankText, textScore } from './retrieval-scoring';

describe('textScore', () => {
  it('is 0 without a matched term, and at most 1', () => {
    expect(textScore({ rank: 5, matched: 0, terms: 3 })).toBe(0);
    expect(textScore({ rank: 0.2, matched: 1, terms: 0 })).toBe(0);
    expect(textScore({ rank: 1e9, matched: 3, terms: 3 })).toBeLessThanOrEqual(1);
  });

  it('grows with coverage and with rank', () => {
    expect(textScore({ rank: 0.3, matched: 3, terms: 3 })).toBeGreaterThan(textScore({ rank: 0.3, matched: 2, terms: 3 }));
    expect(textScore({ rank: 0.6, matched: 2, terms: 3 })).toBeGreaterThan(textScore({ rank: 0.1, matched: 2, terms: 3 }));
  });

  it('every term prominently is high; every term in passing is medium; a third of them is low', () => {
    expect(confidenceOf(textScore({ rank: 0.6, matched: 2, terms: 2 }))).toBe('high');
    expect(confidenceOf(textScore({ rank: 0.03, matched: 2, terms: 2 }))).toBe('medium');
    expect(confidenceOf(textScore({ rank: 0.6, matched: 1, terms: 3 }))).toBe('low');
  });
});

describe('confidence', () => {
  it('maps scores by the documented thresholds', () => {
    expect(confidenceOf(CONFIDENCE_THRESHOLDS.high)).toBe('high');
    expect(confidenceOf(CONFIDENCE_THRESHOLDS.high - 0.01)).toBe('medium');
    expect(confidenceOf(CONFIDENCE_THRESHOLDS.medium)).toBe('medium');
    expect(confidenceOf(CONFIDENCE_THRESHOLDS.medium - 0.01)).toBe('low');
    expect(confidenceOf(0)).toBe('low');
  });

  it('bestConfidence picks the best level, none for nothing', () => {
    expect(bestConfidence([])).toBe('none');
    expect(bestConfidence(['low', 'medium'])).toBe('medium');
    expect(bestConfidence(['low', 'high', 'medium'])).toBe('high');
  });
});

describe('rankText', () => {
  it('orders by coverage-weighted score, not raw rank', () => {
    const ranked = rankText([
      { id: 'repeats-one-word', rank: 2, matched: 1, terms: 3 },
      { id: 'has-every-word', rank: 0.2, matched: 3, terms: 3 },
    ]);
    expect(ranked.map((h) => h.id)).toEqual(['has-every-word', 'repeats-one-word']);
    expect(ranked[0].score).toBe(ranked[0].textScore);
  });
});

describe('fuseTextAndVector', () => {
  const text = [
    { id: 'a', rank: 0.5, matched: 2, terms: 2 },
    { id: 'b', rank: 0.1, matched: 1, terms: 2 },
  ];

  it('first in both rankings scores 1; first in one only about 0.5', () => {
    const fused = fuseTextAndVector(text, [
      { id: 'a', similarity: 0.9 },
      { id: 'c', similarity: 0.8 },
    ]);
    expect(fused[0]).toMatchObject({ id: 'a', score: 1, confidence: 'high' });
    const c = fused.find((h) => h.id === 'c')!;
    expect(c.score).toBeCloseTo((1 / 62) / (2 / 61), 6);
  });

  it('a chunk only the vector search found is low confidence, whatever its similarity', () => {
    const fused = fuseTextAndVector([], [{ id: 'v', similarity: 0.99 }]);
    expect(fused).toEqual([{ id: 'v', score: 0.5, textScore: 0, confidence: 'low' }]);
  });

  it('vector agreement lifts a lower full-text hit above a text-only one', () => {
    const fused = fuseTextAndVector(text, [{ id: 'b', similarity: 0.9 }]);
    expect(fused.map((h) => h.id)).toEqual(['b', 'a']);
    expect(fused.every((h) => h.score > 0 && h.score <= 1)).toBe(true);
  });
});
