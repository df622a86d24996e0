/**
 * A fielded BM25+ inverted index over pre-analyzed terms: per term and field a postings list
 * (document slot, term frequency), per document and field its length, and one search that
 * walks only the postings of the query's terms into flat score arrays.
 *
 * Why not MiniSearch, which this replaced: its search builds a Map and a match object per
 * matching document and term, then merges those Maps term by term. At 10,000 tools a long
 * request touches most of the catalog and that allocation took search p99 to ~35 ms, twice a
 * plain linear scan (`npm run bench:tool-retrieval -- --scale 10k`). The scoring is MiniSearch's
 * BM25+ formula kept as it was, so rankings did not change:
 *   idf(t, f) · (d + tf·(k1+1) / (tf + k1·(1 − b + b·len/avgLen)))  per field f, × field boost,
 * with idf over the documents that have t in f, and len = distinct terms of the field.
 */

export interface Bm25Params {
  k: number;
  b: number;
  d: number;
}

/** One matching document of a search. */
export interface Bm25Candidate {
  id: string;
  /** Σ over matched terms and fields of boost × BM25+ */
  score: number;
  /** Σ of the caller's per-term weights over the distinct query terms the document matches */
  covered: number;
}

interface Postings {
  slots: number[];
  tfs: number[];
}

export class FieldedBm25 {
  private readonly fieldCount: number;
  /** term → one postings list per field */
  private readonly postings = new Map<string, Array<Postings | undefined>>();
  private readonly ids: Array<string | undefined> = [];
  private readonly slotOf = new Map<string, number>();
  /** per slot, per field: distinct terms (MiniSearch's field length) */
  private readonly lengths: number[][] = [];
  /** per slot, per field: the analyzed terms, to undo an add */
  private readonly fieldTerms: string[][][] = [];
  private readonly lengthSums: number[];
  private readonly free: number[] = [];
  private count = 0;
  // search scratch space, grown with the slots
  private score = new Float64Array(0);
  private covered = new Float64Array(0);
  private seenTerm = new Int32Array(0);

  constructor(
    private readonly boosts: readonly number[],
    private readonly params: Bm25Params,
  ) {
    this.fieldCount = boosts.length;
    this.lengthSums = new Array<number>(this.fieldCount).fill(0);
  }

  get size(): number {
    return this.count;
  }

  has(id: string): boolean {
    return this.slotOf.has(id);
  }

  /** Adds a document: one term list per field (order as the boosts). The id must be new. */
  add(id: string, fields: string[][]): void {
    if (this.slotOf.has(id)) throw new Error(`duplicate id ${id}`);
    const slot = this.free.pop() ?? this.ids.length;
    this.ids[slot] = id;
    this.slotOf.set(id, slot);
    this.count++;
    const lengths: number[] = [];
    for (let f = 0; f < this.fieldCount; f++) {
      const terms = fields[f] ?? [];
      const tf = new Map<string, number>();
      for (const t of terms) tf.set(t, (tf.get(t) ?? 0) + 1);
      // MiniSearch counted an empty field as one (empty) token; kept so scores stay the same
      const len = Math.max(1, tf.size);
      lengths.push(len);
      this.lengthSums[f] += len;
      for (const [term, n] of tf) {
        let perField = this.postings.get(term);
        if (!perField) this.postings.set(term, (perField = new Array(this.fieldCount)));
        const p = (perField[f] ??= { slots: [], tfs: [] });
        p.slots.push(slot);
        p.tfs.push(n);
      }
    }
    this.lengths[slot] = lengths;
    this.fieldTerms[slot] = fields.map((f) => [...new Set(f)]);
  }

  /** Removes a document; returns whether it was there. */
  remove(id: string): boolean {
    const slot = this.slotOf.get(id);
    if (slot === undefined) return false;
    for (let f = 0; f < this.fieldCount; f++) {
      this.lengthSums[f] -= this.lengths[slot][f];
      for (const term of this.fieldTerms[slot][f] ?? []) {
        const perField = this.postings.get(term);
        const p = perField?.[f];
        if (!perField || !p) continue;
        const i = p.slots.indexOf(slot);
        if (i >= 0) {
          // order inside a postings list does not matter: swap with the last and pop
          p.slots[i] = p.slots[p.slots.length - 1];
          p.tfs[i] = p.tfs[p.tfs.length - 1];
          p.slots.pop();
          p.tfs.pop();
        }
        if (p.slots.length === 0) perField[f] = undefined;
        if (perField.every((x) => x === undefined)) this.postings.delete(term);
      }
    }
    this.ids[slot] = undefined;
    this.slotOf.delete(id);
    this.lengths[slot] = [];
    this.fieldTerms[slot] = [];
    this.free.push(slot);
    this.count--;
    return true;
  }

  clear(): void {
    this.postings.clear();
    this.ids.length = 0;
    this.slotOf.clear();
    this.lengths.length = 0;
    this.fieldTerms.length = 0;
    this.lengthSums.fill(0);
    this.free.length = 0;
    this.count = 0;
  }

  /**
   * Every document matching at least one of `terms` (distinct), with its BM25+ sum and the
   * sum of `weights[i]` over the terms it matches in any field. `accept` drops documents.
   */
  search(terms: readonly string[], weights: readonly number[], accept?: (id: string) => boolean): Bm25Candidate[] {
    this.ensureScratch();
    const { k, b, d } = this.params;
    const n = this.count;
    const touched: number[] = [];
    const avg = this.lengthSums.map((s) => (n > 0 ? s / n : 1));
    for (let ti = 0; ti < terms.length; ti++) {
      const perField = this.postings.get(terms[ti]);
      if (!perField) continue;
      for (let f = 0; f < this.fieldCount; f++) {
        const p = perField[f];
        const boost = this.boosts[f];
        if (!p || !(boost > 0)) continue;
        const df = p.slots.length;
        const idf = Math.log(1 + (n - df + 0.5) / (df + 0.5));
        const norm = avg[f] > 0 ? b / avg[f] : 0;
        for (let i = 0; i < df; i++) {
          const slot = p.slots[i];
          const tf = p.tfs[i];
          const len = this.lengths[slot][f];
          const s = boost * idf * (d + (tf * (k + 1)) / (tf + k * (1 - b + norm * len)));
          if (this.seenTerm[slot] === 0) touched.push(slot);
          this.score[slot] += s;
          if (this.seenTerm[slot] !== ti + 1) {
            this.seenTerm[slot] = ti + 1;
            this.covered[slot] += weights[ti] ?? 0;
          }
        }
      }
    }
    const out: Bm25Candidate[] = [];
    for (const slot of touched) {
      const id = this.ids[slot]!;
      if (!accept || accept(id)) out.push({ id, score: this.score[slot], covered: this.covered[slot] });
      this.score[slot] = 0;
      this.covered[slot] = 0;
      this.seenTerm[slot] = 0;
    }
    return out;
  }

  private ensureScratch(): void {
    if (this.score.length >= this.ids.length) return;
    const size = Math.max(64, this.ids.length * 2);
    this.score = new Float64Array(size);
    this.covered = new Float64Array(size);
    this.seenTerm = new Int32Array(size);
  }
}
