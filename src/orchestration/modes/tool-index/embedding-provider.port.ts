import type { InjectionToken } from '@nestjs/common';

/**
 * The port an optional vector retriever would use to embed tool texts and requests. Nothing
 * implements it yet (no embedding model is available to Orion's tool index today); BM25 stands
 * alone. A provider would embed each tool once on registration (name + description + the
 * parameter summary, the same text the BM25 fields hold), embed the request per search, rank
 * by cosine similarity and hand both rankings to `fuse` (rank-fusion.util.ts).
 */
export interface ToolEmbeddingProvider {
  /** identifies the model, so stored vectors from another model are never compared */
  readonly model: string;
  /** length of every vector `embed` returns */
  readonly dimensions: number;
  /** One vector per text, in order. Rejects on failure; callers then fall back to BM25 alone. */
  embed(texts: readonly string[], signal?: AbortSignal): Promise<Float32Array[]>;
}

/** Optional provider token (`@Optional() @Inject(TOOL_EMBEDDING_PROVIDER)`). */
export const TOOL_EMBEDDING_PROVIDER: InjectionToken<ToolEmbeddingProvider> = Symbol('TOOL_EMBEDDING_PROVIDER');
