/**
 * Tool-retrieval benchmark for the NarrowTopK index (bench/README.md "Tool retrieval").
 *
 *   npx tsx bench/tool-retrieval.ts [--tools tools.jsonl] [--queries queries.jsonl] [--no-match no-match.jsonl] [--k 5] [--json] [--single]
 *   npx tsx bench/tool-retrieval.ts --scale 1k,10k,50k   (synthetic-scale mode, tool-retrieval-scale.ts)
 *   npx tsx bench/tool-retrieval.ts --embeddings glove|use   (also BM25 + a local embedding model, tool-retrieval-embedding.ts)
 *
 * Loads every tool into a ToolIndex (one `add` at a time, as the registry does), runs every
 * query and prints recall@1/5/10, MRR, complete@K, search latency and a per-category table
 * beside the plain-BM25 baseline read from the data set's README.md, when it has one.
 * Metric definitions follow bench/data/tool-retrieval/bfcl-pooled/README.md.
 *
 * Thresholds (scores are absolute, 0..1): the highest minScore, in steps of 0.01, that keeps
 * recall@5 and complete@5 within 0.01 of no threshold (the first step past it ends the sweep), recall@5 and
 * complete@5 with and without ORCHESTRATION_MIN_SCORE's default, and how many requests of the
 * no-match set (bench/data/tool-retrieval/no-match.jsonl) each leaves without a candidate.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { ToolIndex, type IndexableTool } from '../src/orchestration/modes/tool-index/tool-index';
import { searchMultiIntent } from '../src/orchestration/modes/tool-index/multi-intent-search';
import { validateEnv } from '../src/config/env.schema';
import { compareWithEmbeddings } from './tool-retrieval-embedding';
import { printScale, runScale, type ScaleRow } from './tool-retrieval-scale';
import { BenchReport } from './report';

const REPO_ROOT = resolve(__dirname, '..');
const DEFAULT_DATA = resolve(REPO_ROOT, 'bench/data/tool-retrieval/bfcl-pooled');
const DEFAULT_NO_MATCH = resolve(REPO_ROOT, 'bench/data/tool-retrieval/no-match.jsonl');
/** recall@5 a threshold may cost against none */
const RECALL_TOLERANCE = 0.01;

interface Args {
  tools: string;
  queries: string;
  /** requests no tool answers (nonsense, other languages' stop words, empty after analysis) */
  noMatch: string;
  k: number;
  json: boolean;
  single: boolean;
  scale: number[];
  /** also compare BM25 with BM25 + a local embedding model (tool-retrieval-embedding.ts): GloVe word vectors or the Universal Sentence Encoder */
  embeddings?: 'glove' | 'use';
}

interface QueryRow {
  id: string;
  query: string;
  relevant: string[];
}

/** Sums of per-query metrics for one subset. */
interface Acc {
  n: number;
  r1: number;
  r5: number;
  r10: number;
  mrr: number;
  c5: number;
  c10: number;
  cK: number;
}

interface Summary {
  n: number;
  recallAt1: number;
  recallAt5: number;
  recallAt10: number;
  mrr: number;
  completeAt5: number;
  completeAt10: number;
  completeAtK: number;
}

interface Baseline {
  recallAt1: number;
  recallAt5: number;
  recallAt10: number;
  mrr: number;
  completeAt5: number;
  completeAt10: number;
}

function parseArgs(argv: string[]): Args {
  const args: Args = { tools: join(DEFAULT_DATA, 'tools.jsonl'), queries: join(DEFAULT_DATA, 'queries.jsonl'), noMatch: DEFAULT_NO_MATCH, k: 5, json: false, single: false, scale: [] };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const value = (): string => {
      const v = argv[++i];
      if (v === undefined) throw new Error(`${a} needs a value`);
      return v;
    };
    if (a === '--tools') args.tools = resolve(value());
    else if (a === '--queries') args.queries = resolve(value());
    else if (a === '--no-match') args.noMatch = resolve(value());
    else if (a === '--k') args.k = Number(value());
    else if (a === '--json') args.json = true;
    else if (a === '--single') args.single = true;
    else if (a === '--embeddings') {
      const model = value();
      if (model !== 'glove' && model !== 'use') throw new Error('--embeddings takes: glove | use');
      args.embeddings = model;
    } else if (a === '--scale') args.scale = value().split(',').map((s) => Number(s.replace(/k$/i, '000')));
    else if (a === '--help' || a === '-h') {
      console.log('usage: tsx bench/tool-retrieval.ts [--tools tools.jsonl] [--queries queries.jsonl] [--no-match no-match.jsonl] [--k 5] [--json] [--single] [--scale 1k,10k,50k] [--embeddings glove|use]');
      process.exit(0);
    } else throw new Error(`unknown argument ${a}`);
  }
  if (!Number.isInteger(args.k) || args.k < 1) throw new Error('--k must be a positive integer');
  if (args.scale.some((n) => !Number.isInteger(n) || n < 1)) throw new Error('--scale takes sizes such as 1k,10k,50k');
  return args;
}

function readJsonl<T>(path: string): T[] {
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((l) => l.trim())
    .map((l, i) => {
      try {
        return JSON.parse(l) as T;
      } catch {
        throw new Error(`${path}:${i + 1}: not JSON`);
      }
    });
}

/** Category = the query id without its trailing `_<number…>` (`live_simple_3-2-1` → `live_simple`). */
function categoryOf(id: string): string {
  const m = /^(.*?)_\d[\w-]*$/.exec(id);
  return m ? m[1] : id;
}

/** The baseline table of the data set's README (`| subset | n | r@1 | r@5 | r@10 | MRR | c@5 | c@10 |`), if any. */
function readBaseline(dataDir: string): Map<string, Baseline> {
  const out = new Map<string, Baseline>();
  const path = join(dataDir, 'README.md');
  if (!existsSync(path)) return out;
  for (const line of readFileSync(path, 'utf8').split('\n')) {
    const cells = line.split('|').map((c) => c.trim().replace(/\*/g, ''));
    if (cells.length < 10) continue;
    const nums = cells.slice(3, 9).map(Number);
    if (nums.some((x) => !Number.isFinite(x)) || !/^[\d,]+$/.test(cells[2])) continue;
    const [recallAt1, recallAt5, recallAt10, mrr, completeAt5, completeAt10] = nums;
    out.set(cells[1], { recallAt1, recallAt5, recallAt10, mrr, completeAt5, completeAt10 });
  }
  return out;
}

function newAcc(): Acc {
  return { n: 0, r1: 0, r5: 0, r10: 0, mrr: 0, c5: 0, c10: 0, cK: 0 };
}

function summarize(a: Acc): Summary {
  const d = Math.max(1, a.n);
  return {
    n: a.n,
    recallAt1: a.r1 / d,
    recallAt5: a.r5 / d,
    recallAt10: a.r10 / d,
    mrr: a.mrr / d,
    completeAt5: a.c5 / d,
    completeAt10: a.c10 / d,
    completeAtK: a.cK / d,
  };
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i];
}

async function main(): Promise<void> {
  const started = performance.now();
  const args = parseArgs(process.argv.slice(2));
  const rawTools = readJsonl<{ name: string; description?: string; parameters?: Record<string, unknown> }>(args.tools);
  const rows = readJsonl<QueryRow>(args.queries);
  // a query without labels cannot be scored; it is counted and left out
  const queries = rows.filter((q) => typeof q.query === 'string' && Array.isArray(q.relevant) && q.relevant.length > 0);

  const tools: IndexableTool[] = rawTools.map((t) => ({ name: t.name, description: t.description ?? '', parameters: t.parameters ?? {}, origin: 'mcp:bench' }));
  if (args.scale.length > 0) {
    // every 4th query: enough for a p99, and the floor's scans at 50k tools stay within a minute
    const sample = queries.filter((_, i) => i % 4 === 0).map((q) => q.query);
    const rows = runScale(tools, sample, args.scale, Math.max(10, args.k));
    if (args.json) console.log(JSON.stringify({ scale: rows, queries: sample.length }));
    else printScale(rows, sample.length);
    scaleReport(args, rows, sample.length).write();
    return;
  }
  const index = new ToolIndex();
  const t0 = performance.now();
  for (const tool of tools) index.add(tool);
  const buildMs = performance.now() - t0;

  const depth = Math.max(10, args.k);
  // --single: the whole request only (the ranking before multi-intent retrieval), for comparison
  const search = (q: string, k: number, minScore = 0) => (args.single ? index.search(q, k, minScore) : searchMultiIntent(index, q, k, minScore).hits);
  const all = newAcc();
  const perCategory = new Map<string, Acc>();
  const latencies: number[] = [];
  // minScore trade-off, read off the same top-5 hits: candidates kept and complete@5
  const thresholds = [0, 0.25, 0.5, 0.75];
  const sweep = thresholds.map((minScore) => ({ minScore, kept: 0, complete: 0, empty: 0 }));
  // one untimed warm-up so JIT compilation is not billed to the first query
  index.search(queries[0]?.query ?? 'warm up', depth);
  // the same queries ranked on the whole request only (the ranking before multi-intent
  // retrieval), per category: recall@5 and complete@5, to show what splitting changes
  const wholeOnly = new Map<string, { n: number; r5: number; c5: number; split: number }>();
  for (const q of queries) {
    const s = performance.now();
    const hits = search(q.query, depth);
    latencies.push(performance.now() - s);
    if (!args.single) {
      const w = index.search(q.query, 5).map((h) => h.name);
      const acc = wholeOnly.get(categoryOf(q.id)) ?? { n: 0, r5: 0, c5: 0, split: 0 };
      const got = q.relevant.filter((r) => w.includes(r)).length;
      acc.n++;
      acc.r5 += got / new Set(q.relevant).size;
      acc.c5 += got === new Set(q.relevant).size ? 1 : 0;
      acc.split += hits.map((h) => h.name).slice(0, 5).join() === w.join() ? 0 : 1;
      wholeOnly.set(categoryOf(q.id), acc);
    }
    const ranked = hits.map((h) => h.name);
    const relevant = new Set(q.relevant);
    const need = [...relevant];
    const found = (n: number): number => ranked.slice(0, n).filter((name) => relevant.has(name)).length;
    const firstRank = ranked.findIndex((name) => relevant.has(name));
    for (const t of sweep) {
      const kept = hits.slice(0, 5).filter((h) => h.score >= t.minScore);
      t.kept += kept.length;
      t.complete += need.every((name) => kept.some((h) => h.name === name)) ? 1 : 0;
      t.empty += kept.length === 0 ? 1 : 0;
    }
    const cat = categoryOf(q.id);
    if (!perCategory.has(cat)) perCategory.set(cat, newAcc());
    for (const acc of [all, perCategory.get(cat)!]) {
      acc.n++;
      acc.r1 += found(1) / relevant.size;
      acc.r5 += found(5) / relevant.size;
      acc.r10 += found(10) / relevant.size;
      acc.mrr += firstRank >= 0 ? 1 / (firstRank + 1) : 0;
      acc.c5 += found(5) === relevant.size ? 1 : 0;
      acc.c10 += found(10) === relevant.size ? 1 : 0;
      acc.cK += found(args.k) === relevant.size ? 1 : 0;
    }
  }
  latencies.sort((a, b) => a - b);
  // Intrinsic cost, robust to other processes on a busy machine: the fastest of 3 runs per query.
  const stable = queries
    .map((q) => {
      let best = Infinity;
      for (let i = 0; i < 3; i++) {
        const s = performance.now();
        search(q.query, depth);
        best = Math.min(best, performance.now() - s);
      }
      return best;
    })
    .sort((a, b) => a - b);
  const overall = summarize(all);
  const thresholdCheck = thresholdReport(args, queries, search);
  const baseline = readBaseline(dirname(args.queries));
  const categories = [...perCategory.entries()].map(([name, acc]) => ({ name, ...summarize(acc), baseline: baseline.get(name) ?? null }));
  const result = {
    tools: index.size,
    queries: queries.length,
    unlabelledQueries: rows.length - queries.length,
    k: args.k,
    recallAt1: overall.recallAt1,
    recallAt5: overall.recallAt5,
    recallAt10: overall.recallAt10,
    mrr: overall.mrr,
    completeAt5: overall.completeAt5,
    completeAt10: overall.completeAt10,
    completeAtK: overall.completeAtK,
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
    maxMs: latencies[latencies.length - 1] ?? 0,
    p50StableMs: percentile(stable, 50),
    p99StableMs: percentile(stable, 99),
    buildMs,
    totalMs: performance.now() - started,
    baseline: baseline.get('all') ?? null,
    perCategory: categories,
    thresholds: thresholdCheck,
    minScoreSweep: sweep.map((t) => ({
      minScore: t.minScore,
      meanCandidatesAt5: t.kept / Math.max(1, queries.length),
      completeAt5: t.complete / Math.max(1, queries.length),
      noCandidates: t.empty / Math.max(1, queries.length),
    })),
  };

  const report = retrievalReport(args, result);
  if (args.json) {
    console.log(JSON.stringify(result));
    report.write();
    return;
  }
  const f = (x: number): string => x.toFixed(3);
  const vs = (x: number, b: number | undefined): string => (b === undefined ? f(x) : `${f(x)} (${b.toFixed(3)})`);
  console.log(`tool retrieval: ${result.tools} tools, ${result.queries} queries (${args.tools})` + (result.unlabelledQueries ? `, ${result.unlabelledQueries} unlabelled queries left out` : ''));
  console.log(`index build ${buildMs.toFixed(1)} ms · search p50 ${result.p50Ms.toFixed(3)} ms · p99 ${result.p99Ms.toFixed(3)} ms · max ${result.maxMs.toFixed(3)} ms`);
  console.log(`search, fastest of 3 runs per query: p50 ${result.p50StableMs.toFixed(3)} ms · p99 ${result.p99StableMs.toFixed(3)} ms`);
  console.log(`recall@1 ${f(result.recallAt1)} · recall@5 ${f(result.recallAt5)} · recall@10 ${f(result.recallAt10)} · MRR ${f(result.mrr)} · complete@5 ${f(result.completeAt5)} · complete@10 ${f(result.completeAt10)}` + (args.k !== 5 && args.k !== 10 ? ` · complete@${args.k} ${f(result.completeAtK)}` : ''));
  console.log('');
  console.log(`values: this index (plain BM25 from the data set README)${baseline.size ? '' : ' (no README baseline found)'}`);
  console.log('| subset | n | recall@1 | recall@5 | recall@10 | MRR | complete@5 | complete@10 |');
  console.log('|---|---|---|---|---|---|---|---|');
  const row = (name: string, s: Summary, b: Baseline | null | undefined): string =>
    `| ${name} | ${s.n} | ${vs(s.recallAt1, b?.recallAt1)} | ${vs(s.recallAt5, b?.recallAt5)} | ${vs(s.recallAt10, b?.recallAt10)} | ${vs(s.mrr, b?.mrr)} | ${vs(s.completeAt5, b?.completeAt5)} | ${vs(s.completeAt10, b?.completeAt10)} |`;
  console.log(row('all', overall, result.baseline));
  for (const c of categories) console.log(row(c.name, c, c.baseline));
  console.log('\nminScore at k=5: mean candidates kept · complete@5 · share of queries left with none');
  for (const t of result.minScoreSweep) {
    console.log(`  ≥ ${t.minScore.toFixed(2)}: ${t.meanCandidatesAt5.toFixed(2)} · ${f(t.completeAt5)} · ${f(t.noCandidates)}`);
  }
  printThresholds(thresholdCheck);
  if (wholeOnly.size) {
    report.table(
      'whole-request',
      'Multi-intent vs the whole request only (--single), at k=5',
      ['subset', 'recall@5 multi-intent', 'recall@5 whole request', 'complete@5 multi-intent', 'complete@5 whole request', 'queries whose top 5 changed'],
      categories.map((c) => {
        const w = wholeOnly.get(c.name)!;
        return [c.name, f(c.recallAt5), f(w.r5 / w.n), f(c.completeAt5), f(w.c5 / w.n), String(w.split)];
      }),
    );
    const all = [...wholeOnly.values()].reduce((x, w) => ({ n: x.n + w.n, r5: x.r5 + w.r5, c5: x.c5 + w.c5 }), { n: 0, r5: 0, c5: 0 });
    report.add('whole-request.recall@5', 'recall@5 on the whole request only (before multi-intent)', all.r5 / Math.max(1, all.n), '');
    report.add('whole-request.complete@5', 'complete@5 on the whole request only (before multi-intent)', all.c5 / Math.max(1, all.n), '');
    console.log('\nmulti-intent vs whole request only (--single), at k=5: recall@5 · complete@5 · queries whose top 5 changed');
    const lost: string[] = [];
    for (const c of categories) {
      const w = wholeOnly.get(c.name)!;
      const [r5, c5] = [w.r5 / w.n, w.c5 / w.n];
      if (c.recallAt5 < r5 - 1e-9 || c.completeAt5 < c5 - 1e-9) lost.push(c.name);
      console.log(`  ${c.name}: ${f(c.recallAt5)} vs ${f(r5)} · ${f(c.completeAt5)} vs ${f(c5)} · ${w.split}`);
    }
    console.log(`  categories where splitting lost: ${lost.length ? lost.join(', ') : 'none'}`);
  }
  const below = categories.filter((c) => c.baseline && c.recallAt5 < c.baseline.recallAt5 - 1e-9).map((c) => c.name);
  if (baseline.size) console.log(`\ncategories below plain BM25 on recall@5: ${below.length ? below.join(', ') : 'none'}`);
  console.log(`total run time ${(result.totalMs / 1000).toFixed(2)} s`);
  if (args.embeddings) await compareWithEmbeddings(tools, queries, categoryOf, args.embeddings, report);
  report.write();
}

const relative = (path: string) => path.replace(`${REPO_ROOT}/`, '');

/** The default mode's figures; its floor is plain BM25 as the data set's README reports it (quality, not time). */
function retrievalReport(
  args: Args,
  r: Omit<Summary, 'n'> & { tools: number; queries: number; p50Ms: number; p99Ms: number; maxMs: number; p50StableMs: number; p99StableMs: number; buildMs: number; totalMs: number; baseline: Baseline | null; perCategory: Array<Summary & { name: string; baseline: Baseline | null }>; thresholds: ThresholdReport },
): BenchReport {
  const report = new BenchReport(
    'tool-retrieval',
    'The NarrowTopK tool index with multi-intent retrieval on a labelled tool set: recall@1/5/10, MRR, complete@5/10, search latency, and ' +
      'the minScore threshold pick. Floor: plain BM25 on the same set, as the data set README reports it.',
    { tools: relative(args.tools), queries: relative(args.queries), noMatch: relative(args.noMatch), k: args.k, single: args.single, embeddings: args.embeddings ?? 'none', toolCount: r.tools, queryCount: r.queries },
  );
  const b = r.baseline ?? undefined;
  const vs = (x: number | undefined) => (b ? { floor: x } : undefined);
  report
    .add('build.ms', 'index build', r.buildMs, 'ms')
    .add('search.p50.ms', 'search p50', r.p50Ms, 'ms')
    .add('search.p99.ms', 'search p99', r.p99Ms, 'ms')
    .add('search.max.ms', 'search max', r.maxMs, 'ms')
    .add('search.stable.p50.ms', 'search p50, fastest of 3 runs per query', r.p50StableMs, 'ms')
    .add('search.stable.p99.ms', 'search p99, fastest of 3 runs per query', r.p99StableMs, 'ms')
    .add('recall@1', 'recall@1', r.recallAt1, '', vs(b?.recallAt1))
    .add('recall@5', 'recall@5', r.recallAt5, '', vs(b?.recallAt5))
    .add('recall@10', 'recall@10', r.recallAt10, '', vs(b?.recallAt10))
    .add('mrr', 'MRR', r.mrr, '', vs(b?.mrr))
    .add('complete@5', 'complete@5', r.completeAt5, '', vs(b?.completeAt5))
    .add('complete@10', 'complete@10', r.completeAt10, '', vs(b?.completeAt10))
    .add('threshold.recommended', 'highest minScore keeping recall@5 and complete@5 within 0.01 of none', r.thresholds.recommended, '')
    .add('threshold.configured', 'ORCHESTRATION_MIN_SCORE default', r.thresholds.configured, '')
    .add('threshold.configured.recall@5', 'recall@5 at the default minScore', r.thresholds.atConfigured.recallAt5, '')
    .add('threshold.configured.complete@5', 'complete@5 at the default minScore', r.thresholds.atConfigured.completeAt5, '')
    .add('total.s', 'total run time', r.totalMs / 1000, 's');
  const t = r.thresholds;
  const refused = (a: AtThreshold) => Object.values(a.refused).reduce((x, y) => x + y, 0);
  report
    .add('no-match.requests', 'requests no tool answers (the no-match set)', Object.values(t.noMatchQueries).reduce((x, y) => x + y, 0), '')
    .add('no-match.refused.none', 'no-match requests left without a candidate, no threshold', refused(t.none), '')
    .add('no-match.refused.configured', 'no-match requests left without a candidate at the default minScore', refused(t.atConfigured), '');
  const f = (x: number) => x.toFixed(3);
  const cell = (x: number, base: number | undefined) => (base === undefined ? f(x) : `${f(x)} (${base.toFixed(3)})`);
  const rows = [{ name: 'all', ...r, n: r.queries }, ...r.perCategory].map((c) => [
    c.name,
    String(c.n),
    cell(c.recallAt1, c.baseline?.recallAt1),
    cell(c.recallAt5, c.baseline?.recallAt5),
    cell(c.recallAt10, c.baseline?.recallAt10),
    cell(c.mrr, c.baseline?.mrr),
    cell(c.completeAt5, c.baseline?.completeAt5),
    cell(c.completeAt10, c.baseline?.completeAt10),
  ]);
  return report.table('categories', 'Per category: this index (plain BM25 from the data set README)', ['subset', 'n', 'recall@1', 'recall@5', 'recall@10', 'MRR', 'complete@5', 'complete@10'], rows);
}

/** --scale: synthetic catalogs; the floor is a linear BM25 scan over the same catalog. */
function scaleReport(args: Args, rows: ScaleRow[], queries: number): BenchReport {
  const report = new BenchReport(
    'tool-retrieval-scale',
    'Synthetic tool catalogs (the set\'s tools repeated and perturbed): index build, heap per tool and search p50/p99 (fastest of 3 per query), ' +
      'against the floor, a linear BM25 scan over the same catalog.',
    { sizes: args.scale, queries, k: Math.max(10, args.k), tools: relative(args.tools) },
  );
  for (const r of rows) {
    const at = `${r.tools}`;
    report
      .add(`${at}.build.s`, `${r.tools} tools: build`, r.buildMs / 1000, 's', { floor: r.floorBuildMs / 1000 })
      .add(`${at}.heap-per-tool.kib`, `${r.tools} tools: heap per tool`, r.heapBytesPerTool / 1024, 'KiB')
      .add(`${at}.search.p50.ms`, `${r.tools} tools: search p50`, r.p50Ms, 'ms', { floor: r.floorP50Ms })
      .add(`${at}.search.p99.ms`, `${r.tools} tools: search p99`, r.p99Ms, 'ms', { floor: r.floorP99Ms, ratio: r.p99Ratio });
  }
  return report;
}

type Search = (q: string, k: number, minScore?: number) => Array<{ name: string; score: number }>;

interface AtThreshold {
  minScore: number;
  recallAt5: number;
  completeAt5: number;
  /** per no-match category: requests left without any candidate */
  refused: Record<string, number>;
}

interface ThresholdReport {
  /** the highest minScore (steps of 0.01) whose recall@5 and complete@5 stay within RECALL_TOLERANCE of none */
  recommended: number;
  /** ORCHESTRATION_MIN_SCORE's default */
  configured: number;
  none: AtThreshold;
  atRecommended: AtThreshold;
  atConfigured: AtThreshold;
  /** per no-match category: how many requests it holds */
  noMatchQueries: Record<string, number>;
  /** the no-match requests the configured threshold still answers, with their best candidate */
  answeredAtConfigured: Array<{ category: string; query: string; best: string; score: number }>;
}

/** recall@5, complete@5 and no-match refusals with NarrowTopK's own threshold (applied inside the search, as the service does). */
function thresholdReport(args: Args, queries: QueryRow[], search: Search): ThresholdReport {
  const noMatch = existsSync(args.noMatch) ? readJsonl<{ query: string; category: string }>(args.noMatch) : [];
  const noMatchQueries: Record<string, number> = {};
  for (const q of noMatch) noMatchQueries[q.category] = (noMatchQueries[q.category] ?? 0) + 1;
  const at = (minScore: number): AtThreshold => {
    let r5 = 0;
    let c5 = 0;
    for (const q of queries) {
      const top = new Set(search(q.query, 5, minScore).map((h) => h.name));
      const relevant = new Set(q.relevant);
      const got = [...relevant].filter((r) => top.has(r)).length;
      r5 += got / relevant.size;
      c5 += got === relevant.size ? 1 : 0;
    }
    const refused: Record<string, number> = {};
    for (const q of noMatch) refused[q.category] = (refused[q.category] ?? 0) + (search(q.query, 5, minScore).length === 0 ? 1 : 0);
    const n = Math.max(1, queries.length);
    return { minScore, recallAt5: r5 / n, completeAt5: c5 / n, refused };
  };
  const none = at(0);
  let atRecommended = none;
  for (let step = 1; step <= 100; step++) {
    const next = at(step / 100);
    // complete@5 is held to the same tolerance, so the pick costs neither more than 0.01
    if (next.recallAt5 < none.recallAt5 - RECALL_TOLERANCE || next.completeAt5 < none.completeAt5 - RECALL_TOLERANCE) break;
    atRecommended = next;
  }
  const configured = validateEnv({}).ORCHESTRATION_MIN_SCORE;
  const atConfigured = configured === atRecommended.minScore ? atRecommended : at(configured);
  const answeredAtConfigured = noMatch.flatMap((q) => {
    const [best] = search(q.query, 1, configured);
    return best ? [{ category: q.category, query: q.query, best: best.name, score: best.score }] : [];
  });
  return { recommended: atRecommended.minScore, configured, none, atRecommended, atConfigured, noMatchQueries, answeredAtConfigured };
}

function printThresholds(t: ThresholdReport): void {
  const f = (x: number): string => x.toFixed(3);
  const categories = Object.keys(t.noMatchQueries);
  const refused = (a: AtThreshold): string => categories.map((c) => `${c} ${a.refused[c] ?? 0}/${t.noMatchQueries[c]}`).join(' · ');
  console.log(`
threshold (absolute scores): highest minScore keeping recall@5 and complete@5 within ${RECALL_TOLERANCE} of none: ${t.recommended.toFixed(2)}; ORCHESTRATION_MIN_SCORE default ${t.configured}`);
  console.log('  minScore: recall@5 · complete@5 · no-match requests left without a candidate');
  const rows: Array<[string, AtThreshold]> = [
    ['none (0)', t.none],
    [`${t.recommended.toFixed(2)} (highest within ${RECALL_TOLERANCE})`, t.atRecommended],
  ];
  if (t.atConfigured !== t.atRecommended) rows.push([`${t.configured} (default)`, t.atConfigured]);
  else rows[1][0] += ' = default';
  for (const [label, a] of rows) console.log(`  ${label}: ${f(a.recallAt5)} · ${f(a.completeAt5)} · ${refused(a)}`);
  console.log(`  no-match requests still answered at ${t.configured}:`);
  for (const a of t.answeredAtConfigured) console.log(`    ${a.category}: "${a.query}" → ${a.best} ${a.score.toFixed(2)}`);
}

main().catch((err: Error) => {
  console.error(`tool-retrieval: ${err.message}`);
  process.exit(2);
});
