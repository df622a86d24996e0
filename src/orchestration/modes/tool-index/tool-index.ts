import type { ToolDefinition, ToolOrigin } from '../../../tools/tool-definition';
import { analyze, summarizeParameters, type AnalyzeOptions } from './tool-text.util';
import { FieldedBm25 } from './fielded-bm25';

/** What the index needs of a tool: what the model would see of it, plus its origin. */
export type IndexableTool = Pick<ToolDefinition, 'name' | 'description' | 'parameters' | 'origin'>;

/** One candidate: `score` is absolute, 0..1, the same whatever the other candidates (see ToolIndex.search). */
export interface ToolIndexHit {
  name: string;
  score: number;
  origin: ToolOrigin;
}

/**
 * The indexed fields. `name` is the tool name split into words (`math.factorial` →
 * `math factorial`); `paramNames` holds parameter names and enum values (short,
 * identifier-like: `unit` + `celsius fahrenheit`); `paramText` the parameter descriptions.
 */
export type ToolIndexField = 'name' | 'description' | 'paramNames' | 'paramText';
const FIELDS: readonly ToolIndexField[] = ['name', 'description', 'paramNames', 'paramText'];

/** Tuning knobs; the defaults are the tuned values. */
export interface ToolIndexOptions {
  /** per-field BM25 weight; 0 leaves a field out of the search */
  boost: Record<ToolIndexField, number>;
  /** BM25+ parameters (`k` = k1, `b`, and `d`, the BM25+ lower bound per matching term) */
  bm25: { k: number; b: number; d: number };
  /**
   * Coverage exponent p: a tool's summed BM25 score is multiplied by c^p, where c is the share
   * of the query's IDF mass (distinct terms) the tool matches in any field. 0 turns it off.
   */
  coverageExponent: number;
  /** text analysis, the same for tools and queries */
  analyzer: AnalyzeOptions;
  /**
   * Latency guard: a query's distinct terms are taken rarest first until the tools containing
   * them add up to this many (always at least MIN_QUERY_TERMS terms). Search cost grows with
   * those postings; the terms left out are the most common words of a long request, which
   * BM25 weighs least anyway.
   */
  maxQueryPostings: number;
}

/** Terms a query always keeps, whatever `maxQueryPostings` says. */
const MIN_QUERY_TERMS = 8;

/**
 * The saturation constant of the absolute score: score = s / (s + SCORE_SATURATION), where s is
 * the ranking score (BM25+ × coverage², below). At 1 the bundled benchmark's relevant tools
 * spread over the whole scale (median s ≈ 10 → 0.91; the weakest 1 % s ≈ 0.26 → 0.21) while a
 * tool matching one word of a request otherwise made of unknown words stays low (s ≈ 0.1–0.4).
 */
export const SCORE_SATURATION = 1;

/**
 * Where the numbers come from: sweeps on the bfcl-pooled set
 * (`npm run bench:tool-retrieval`, bench/README.md "Tool retrieval"), keeping round values in
 * the middle of a plateau rather than the best point. On that set name boost 1–3, k1 0.9–1.6,
 * b 0.5–0.9 and d 0–0.5 all land within ±0.003 recall@5. What matters (recall@5 lost when
 * removed): the parameter fields −0.09, the coverage factor −0.08, stemming −0.016, stop
 * words −0.012. The postings budget costs nothing there and cuts p99 latency by half.
 */
export const DEFAULT_TOOL_INDEX_OPTIONS: ToolIndexOptions = {
  boost: { name: 2, description: 1, paramNames: 0.5, paramText: 0.2 },
  bm25: { k: 1.2, b: 0.7, d: 0.5 },
  coverageExponent: 2,
  analyzer: {},
  maxQueryPostings: 1000,
};

interface IndexedDoc {
  origin: ToolOrigin;
  /** distinct analyzed terms over all fields, for document frequencies */
  terms: string[];
}

/**
 * An in-process BM25 index over tools (an inverted index, fielded-bm25.ts), built one tool at
 * a time. Text goes through `analyze` (identifier splitting, lowercase, stop words, light
 * stemming) on both sides.
 *
 * Ranking: BM25+ per field × field boost, summed over the distinct query terms,
 * times the tool's IDF-weighted coverage of the query squared (a tool that matches the rare
 * words of a request beats one that matches a common word many times).
 *
 * Long requests: query terms are used rarest first within a postings budget
 * (`maxQueryPostings`), which bounds search time whatever the request length.
 *
 * Scores are absolute: the ranking score s mapped through the fixed saturation
 * s / (s + SCORE_SATURATION), so 0 ≤ score < 1, the order is s's, and a tool's score does not
 * depend on the other candidates. A threshold can therefore say "nothing here is relevant
 * enough" (a request whose words are mostly unknown to every tool scores low, since those words
 * count against the coverage). What it does depend on is the catalog, as BM25 does: a word's
 * IDF grows with the log of the number of tools, so the same match scores lower in a catalog
 * of six tools than in one of two thousand.
 */
export class ToolIndex {
  private readonly options: ToolIndexOptions;
  private readonly engine: FieldedBm25;
  /** per indexed name: origin and distinct terms */
  private readonly docs = new Map<string, IndexedDoc>();
  /** document frequency per term over all fields, for the coverage factor */
  private readonly df = new Map<string, number>();

  constructor(options: Partial<ToolIndexOptions> = {}) {
    this.options = {
      ...DEFAULT_TOOL_INDEX_OPTIONS,
      ...options,
      boost: { ...DEFAULT_TOOL_INDEX_OPTIONS.boost, ...options.boost },
      bm25: { ...DEFAULT_TOOL_INDEX_OPTIONS.bm25, ...options.bm25 },
      analyzer: { ...DEFAULT_TOOL_INDEX_OPTIONS.analyzer, ...options.analyzer },
    };
    this.engine = new FieldedBm25(
      FIELDS.map((f) => this.options.boost[f]),
      this.options.bm25,
    );
  }

  /** Number of tools indexed. */
  get size(): number {
    return this.docs.size;
  }

  has(name: string): boolean {
    return this.docs.has(name);
  }

  /** Names of the indexed tools, in no particular order. */
  names(): string[] {
    return [...this.docs.keys()];
  }

  /** Adds a tool, or replaces the indexed tool of the same name. */
  add(tool: IndexableTool): void {
    this.remove(tool.name);
    const { doc, fields } = this.toDoc(tool);
    this.engine.add(tool.name, fields);
    this.docs.set(tool.name, doc);
    for (const t of doc.terms) this.df.set(t, (this.df.get(t) ?? 0) + 1);
  }

  /** Same as `add`: the new definition wins over any indexed one. */
  replace(tool: IndexableTool): void {
    this.add(tool);
  }

  /** Removes a tool by name or by the tool itself; returns whether it was indexed. */
  remove(toolOrName: string | Pick<IndexableTool, 'name'>): boolean {
    const name = typeof toolOrName === 'string' ? toolOrName : toolOrName.name;
    const doc = this.docs.get(name);
    if (!doc) return false;
    this.engine.remove(name);
    this.docs.delete(name);
    for (const t of doc.terms) {
      const n = (this.df.get(t) ?? 1) - 1;
      if (n > 0) this.df.set(t, n);
      else this.df.delete(t);
    }
    return true;
  }

  /** Empties the index. */
  clear(): void {
    this.engine.clear();
    this.docs.clear();
    this.df.clear();
  }

  /**
   * The best `k` tools for a request, best first, each scoring ≥ `minScore` (0..1, absolute:
   * see the class comment). An empty or stop-word-only query, `k < 1`, a query that matches
   * nothing or an empty index give `[]`. Ties are broken by name, so results do not depend on
   * registration order. `filter` drops tools before the top `k` is taken; it changes no score.
   */
  search(query: string, k: number, minScore = 0, filter?: (name: string) => boolean): ToolIndexHit[] {
    const limit = Math.floor(k);
    if (!(limit >= 1) || this.docs.size === 0 || typeof query !== 'string') return [];
    const terms = this.queryTerms(query);
    if (terms.length === 0) return [];
    const idf = terms.map((t) => this.idf(t));
    const raw = this.engine.search(terms, idf, filter);
    if (raw.length === 0) return [];

    // every query term counts, a word no tool has included: a request made mostly of words no
    // tool knows is explained only in part by any tool, and its scores say so
    const queryIdf = idf.reduce((a, b) => a + b, 0);
    const p = this.options.coverageExponent;
    const ranked = raw.map((r) => ({
      name: r.id,
      raw: p > 0 && queryIdf > 0 ? r.score * (r.covered / queryIdf) ** p : r.score,
    }));
    const threshold = Number.isFinite(minScore) ? minScore : 0;
    const hits: ToolIndexHit[] = [];
    for (const r of topK(ranked, limit)) {
      const score = absoluteScore(r.raw);
      // best first, so the first one below the threshold ends the list
      if (!(score > 0) || score < threshold) break;
      hits.push({ name: r.name, score, origin: this.docs.get(r.name)!.origin });
    }
    return hits;
  }

  /** Distinct analyzed query terms, rarest first, within the postings budget. */
  private queryTerms(query: string): string[] {
    // distinct: a word repeated in a long request should not outweigh the others
    const byRarity = [...new Set(analyze(query, this.options.analyzer))]
      .map((term) => ({ term, df: this.df.get(term) ?? 0 }))
      .sort((a, b) => a.df - b.df);
    const kept: string[] = [];
    let postings = 0;
    for (const { term, df } of byRarity) {
      if (kept.length >= MIN_QUERY_TERMS && postings + df > this.options.maxQueryPostings) break;
      postings += df;
      kept.push(term);
    }
    return kept;
  }

  /** BM25's IDF over whole tools; a term no tool has gets the highest value. */
  private idf(term: string): number {
    const n = this.docs.size;
    const df = this.df.get(term) ?? 0;
    return Math.log(1 + (n - df + 0.5) / (df + 0.5));
  }

  private toDoc(tool: IndexableTool): { doc: IndexedDoc; fields: string[][] } {
    const params = summarizeParameters(tool.parameters);
    const fields = [
      analyze(tool.name, this.options.analyzer),
      analyze(tool.description ?? '', this.options.analyzer),
      analyze(`${params.names} ${params.enums}`, this.options.analyzer),
      analyze(params.text, this.options.analyzer),
    ];
    return { doc: { origin: tool.origin, terms: [...new Set(fields.flat())] }, fields };
  }
}

interface Ranked {
  name: string;
  raw: number;
}

/** The fixed saturation s / (s + SCORE_SATURATION): 0..1, monotone, the same for every query. */
function absoluteScore(raw: number): number {
  return raw > 0 ? raw / (raw + SCORE_SATURATION) : 0;
}

const before = (a: Ranked, b: Ranked): boolean => a.raw > b.raw || (a.raw === b.raw && a.name < b.name);

/** The k best by score, then by name: one pass with a small sorted buffer, or a sort when k is large. */
function topK(items: Ranked[], k: number): Ranked[] {
  if (k * 8 >= items.length) return [...items].sort((a, b) => (before(a, b) ? -1 : before(b, a) ? 1 : 0)).slice(0, k);
  const out: Ranked[] = [];
  for (const it of items) {
    if (out.length === k && !before(it, out[k - 1])) continue;
    let i = out.length < k ? out.length : k - 1;
    while (i > 0 && before(it, out[i - 1])) {
      out[i] = out[i - 1];
      i--;
    }
    out[i] = it;
  }
  return out;
}
