/**
 * Synthetic-scale mode of the tool-retrieval bench (`--scale 1k,10k,50k`): catalogs of N tools
 * built by repeating the data set's tools with perturbed names and descriptions, then build
 * time, heap per tool and search p50/p99 of the index, beside a floor measured in the same run
 * on the same catalog: a plain linear BM25 scan (name + description, the same analyzer), the
 * least code that ranks every tool for a query.
 */
import { performance } from 'node:perf_hooks';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { ToolIndex, type IndexableTool } from '../src/orchestration/modes/tool-index/tool-index';
import { searchMultiIntent } from '../src/orchestration/modes/tool-index/multi-intent-search';
import { analyze } from '../src/orchestration/modes/tool-index/tool-text.util';
import { mulberry32 } from '../test/support/prng';

export interface ScaleRow {
  tools: number;
  buildMs: number;
  heapBytesPerTool: number;
  p50Ms: number;
  p99Ms: number;
  floorBuildMs: number;
  floorP50Ms: number;
  floorP99Ms: number;
  /** index p99 / floor p99 (below 1: the index is faster than the scan) */
  p99Ratio: number;
}


/**
 * N tools: copy c of tool i is named `<ns>_<c>.<name>` (an MCP server prefix) and its
 * description loses one word and gains one word of another tool's description, so copies are
 * near-duplicates, as tools of similar MCP servers are. Copy 0 is the data set's tool as is.
 */
export function syntheticCatalog(base: IndexableTool[], n: number, seed = 15): IndexableTool[] {
  const rand = mulberry32(seed);
  const words = base.flatMap((t) => (t.description ?? '').split(/\s+/).filter((w) => /^[a-z]{4,}$/i.test(w)));
  const out: IndexableTool[] = [];
  for (let c = 0; out.length < n; c++) {
    for (const t of base) {
      if (out.length >= n) break;
      if (c === 0) {
        out.push(t);
        continue;
      }
      const desc = (t.description ?? '').split(/\s+/);
      if (desc.length > 3) desc.splice(Math.floor(rand() * desc.length), 1);
      desc.splice(Math.floor(rand() * (desc.length + 1)), 0, words[Math.floor(rand() * words.length)] ?? 'tool');
      out.push({ ...t, name: `srv${c}_${Math.floor(rand() * 1000)}.${t.name}`, description: desc.join(' ') });
    }
  }
  return out;
}

/** The floor: term frequencies per tool and one BM25 pass over all of them per query. */
class LinearBm25 {
  private readonly docs: Array<{ name: string; tf: Map<string, number>; len: number }> = [];
  private readonly df = new Map<string, number>();
  private avgLen = 0;

  constructor(tools: IndexableTool[]) {
    let total = 0;
    for (const t of tools) {
      const terms = analyze(`${t.name} ${t.description ?? ''}`);
      const tf = new Map<string, number>();
      for (const term of terms) tf.set(term, (tf.get(term) ?? 0) + 1);
      for (const term of tf.keys()) this.df.set(term, (this.df.get(term) ?? 0) + 1);
      this.docs.push({ name: t.name, tf, len: terms.length });
      total += terms.length;
    }
    this.avgLen = total / Math.max(1, tools.length);
  }

  search(query: string, k: number): string[] {
    const n = this.docs.length;
    const q = [...new Set(analyze(query))].map((t) => ({ t, idf: Math.log(1 + (n - (this.df.get(t) ?? 0) + 0.5) / ((this.df.get(t) ?? 0) + 0.5)) }));
    const scored: Array<{ name: string; s: number }> = [];
    for (const d of this.docs) {
      let s = 0;
      for (const { t, idf } of q) {
        const f = d.tf.get(t);
        if (f) s += (idf * f * 2.2) / (f + 1.2 * (0.25 + (0.75 * d.len) / this.avgLen));
      }
      if (s > 0) scored.push({ name: d.name, s });
    }
    return scored
      .sort((a, b) => b.s - a.s)
      .slice(0, k)
      .map((x) => x.name);
  }
}

function gc(): void {
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
}

function heapUsed(): number {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

/** Fastest of `runs` timings per query, sorted: the intrinsic cost on one core, without scheduler noise. */
function timeQueries(queries: string[], run: (q: string) => unknown, runs = 3): number[] {
  run(queries[0] ?? 'warm up');
  return queries
    .map((q) => {
      let best = Infinity;
      for (let i = 0; i < runs; i++) {
        const s = performance.now();
        run(q);
        best = Math.min(best, performance.now() - s);
      }
      return best;
    })
    .sort((a, b) => a - b);
}

export function runScale(base: IndexableTool[], queries: string[], sizes: number[], k: number): ScaleRow[] {
  const rows: ScaleRow[] = [];
  for (const n of sizes) {
    const tools = syntheticCatalog(base, n);
    const before = heapUsed();
    const t0 = performance.now();
    const index = new ToolIndex();
    for (const t of tools) index.add(t);
    const buildMs = performance.now() - t0;
    const heapBytesPerTool = (heapUsed() - before) / n;
    const lat = timeQueries(queries, (q) => searchMultiIntent(index, q, k));

    const f0 = performance.now();
    const floor = new LinearBm25(tools);
    const floorBuildMs = performance.now() - f0;
    const floorLat = timeQueries(queries, (q) => floor.search(q, k));
    const p99 = percentile(lat, 99);
    const floorP99 = percentile(floorLat, 99);
    rows.push({
      tools: n,
      buildMs,
      heapBytesPerTool,
      p50Ms: percentile(lat, 50),
      p99Ms: p99,
      floorBuildMs,
      floorP50Ms: percentile(floorLat, 50),
      floorP99Ms: floorP99,
      p99Ratio: floorP99 > 0 ? p99 / floorP99 : 0,
    });
  }
  return rows;
}

export function printScale(rows: ScaleRow[], queries: number): void {
  console.log(`\nsynthetic scale (${queries} queries, fastest of 3 per query; floor = linear BM25 scan over the same catalog)`);
  console.log('| tools | build | heap/tool | search p50 | search p99 | floor build | floor p50 | floor p99 | p99 index/floor |');
  console.log('|---|---|---|---|---|---|---|---|---|');
  for (const r of rows) {
    console.log(
      `| ${r.tools} | ${(r.buildMs / 1000).toFixed(2)} s | ${(r.heapBytesPerTool / 1024).toFixed(1)} KiB | ${r.p50Ms.toFixed(3)} ms | ${r.p99Ms.toFixed(3)} ms | ${(r.floorBuildMs / 1000).toFixed(2)} s | ${r.floorP50Ms.toFixed(3)} ms | ${r.floorP99Ms.toFixed(3)} ms | ${r.p99Ratio.toFixed(2)} |`,
    );
  }
}
