import type { InjectionToken } from '@nestjs/common';

/**
 * Turns texts into vectors for the knowledge base's vector search. Optional: without one
 * (LLM_EMBEDDING_MODEL unset) search is full-text only.
 */
export interface EmbeddingProvider {
  /** identifies the model; stored vectors of another model are never compared with this one's */
  readonly model: string;
  /** One vector per text, in order. Rejects on failure; callers fall back to full-text search. */
  embed(texts: readonly string[], signal?: AbortSignal): Promise<number[][]>;
}

/** `EmbeddingProvider | null` (null when no embedding model is configured). */
export const KNOWLEDGE_EMBEDDING_PROVIDER: InjectionToken<EmbeddingProvider | null> = Symbol('KNOWLEDGE_EMBEDDING_PROVIDER');
