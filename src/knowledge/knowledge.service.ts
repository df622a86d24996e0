import { Inject, Injectable, Logger } from '@nestjs/common';
import { KNOWLEDGE_EMBEDDING_PROVIDER, type EmbeddingProvider } from './embedding/embedding-provider.port';
import type {
  KnowledgeModuleInfo,
  KnowledgeRetriever,
  RetrievalHooks,
  RetrievalMetrics,
  RetrievalResult,
  RetrievedSource,
} from './knowledge-retriever.port';
import { displayNameOf } from './knowledge-module-name.util';
import { KnowledgeRepository } from './repositories/knowledge.repository';
import { ModuleSummaryCache } from './module-summary.cache';
import { bestConfidence, fuseTextAndVector, rankText, type ScoredHit, type VectorHit } from './retrieval/retrieval-scoring';

/** Results a retrieval may return (rag_query's `topK` maximum). */
export const RETRIEVAL_MAX_TOP_K = 20;
/**
 * Candidates each ranking contributes before fusion: enough that a chunk ranked low by one
 * method and high by the other is still seen (RRF needs both lists), few enough that scoring
 * and snippets stay in the milliseconds.
 */
export const RETRIEVAL_CANDIDATES = 50;
/** Longest query searched; longer questions are cut (their tail adds little to full-text rank). */
export const RETRIEVAL_MAX_QUERY_CHARS = 2000;
/** Longest snippet returned. */
export const SNIPPET_MAX_CHARS = 320;

/**
 * The knowledge base as the rest of Orion sees it (the KNOWLEDGE_RETRIEVER port): the project's
 * modules, and retrieval by PostgreSQL full-text search, fused by reciprocal rank with pgvector
 * cosine similarity when an embedding provider is configured and the database has the vector
 * column. See retrieval-scoring.ts for scores and confidence levels.
 */
@Injectable()
export class KnowledgeService implements KnowledgeRetriever {
  private readonly logger = new Logger('Knowledge');

  constructor(
    private readonly repo: KnowledgeRepository,
    @Inject(KNOWLEDGE_EMBEDDING_PROVIDER) private readonly embeddings: EmbeddingProvider | null,
    private readonly moduleCache: ModuleSummaryCache,
  ) {}

  async modules(projectId: string): Promise<KnowledgeModuleInfo[]> {
    const rows = await this.moduleCache.get(projectId, () => this.repo.moduleSummaries(projectId));
    return rows.map((r) => ({ name: r.module, displayName: displayNameOf(r.module), docType: r.docType, chunks: r.chunks }));
  }

  async retrieve(projectId: string, query: string, topK: number, signal?: AbortSignal, hooks?: RetrievalHooks): Promise<RetrievalResult> {
    const started = performance.now();
    const k = Math.min(RETRIEVAL_MAX_TOP_K, Math.max(1, Math.floor(Number.isFinite(topK) ? topK : 5)));
    const q = query.trim().slice(0, RETRIEVAL_MAX_QUERY_CHARS);
    signal?.throwIfAborted();

    const text = q ? await this.repo.searchText(projectId, q, RETRIEVAL_CANDIDATES) : { terms: 0, hits: [] };
    const vector = q ? await this.vectorCandidates(projectId, q, signal) : null;
    signal?.throwIfAborted();

    const candidates = new Set([...text.hits.map((h) => h.id), ...(vector ?? []).map((h) => h.id)]).size;
    hooks?.onCandidates?.(candidates);
    const method: RetrievalMetrics['method'] = vector && vector.length > 0 ? 'fts+vector' : 'fts';
    const ranked: ScoredHit[] = method === 'fts+vector' ? fuseTextAndVector(text.hits, vector!) : rankText(text.hits);
    const top = ranked.slice(0, k);
    const rows = await this.repo.chunksWithSnippets(projectId, q, top.map((h) => h.id));

    const sources: RetrievedSource[] = [];
    for (const hit of top) {
      const row = rows.get(hit.id);
      if (!row) continue; // removed by a concurrent ingest between the two queries
      sources.push({
        type: 'rag',
        id: row.id,
        title: row.title,
        path: row.path,
        module: row.module,
        snippet: clip(row.snippet.trim() || row.content, SNIPPET_MAX_CHARS),
        content: row.content,
        score: round(hit.score),
        confidence: hit.confidence,
      });
    }
    return {
      query,
      sources,
      confidence: bestConfidence(sources.map((s) => s.confidence)),
      metrics: {
        method,
        candidates,
        returned: sources.length,
        latencyMs: Math.round(performance.now() - started),
        topScore: sources[0]?.score ?? 0,
      },
    };
  }

  /**
   * Vector candidates, or null when vector search is not possible (no provider, no vector
   * column) or failed: an embedding endpoint that is down degrades search to full-text, it
   * does not fail it. Cancellation is not a failure: it propagates.
   */
  private async vectorCandidates(projectId: string, q: string, signal?: AbortSignal): Promise<VectorHit[] | null> {
    if (!this.embeddings || !(await this.repo.hasVectorColumn())) return null;
    try {
      const [embedding] = await this.embeddings.embed([q], signal);
      return await this.repo.searchVector(projectId, embedding, this.embeddings.model, RETRIEVAL_CANDIDATES);
    } catch (err) {
      signal?.throwIfAborted();
      this.logger.warn(`vector search failed, using full-text only: ${(err as Error).message}`);
      return null;
    }
  }
}

function round(n: number): number {
  return Math.round(n * 10_000) / 10_000;
}

/** A snippet on one line: heading markers and underline rows (`## `, `-----`, `====`) dropped, whitespace collapsed, cut at `max`. */
function clip(s: string, max: number): string {
  const flat = s
    .split('\n')
    .filter((line) => !/^\s*([=\-~^"'`#*+_.:])\1{2,}\s*$/.test(line))
    .map((line) => line.replace(/^\s{0,3}#{1,6}\s+/, '').replace(/^={1,6}\s+/, ''))
    .join(' ')
    .replace(/\s+/g, ' ')
    .trim();
  return flat.length <= max ? flat : `${flat.slice(0, max - 1).trimEnd()}…`;
}
