/**
 * What the unified route needs of the knowledge base: the project's modules (for the system
 * prompt) and retrieval (for the direct path, when the model cannot or may not call tools).
 * KnowledgeService implements it; `rag_query` is a tool over the same retrieval.
 */

export interface KnowledgeModuleInfo {
  name: string;
  displayName: string;
  docType: string;
  chunks: number;
}

export type RetrievalConfidence = 'high' | 'medium' | 'low' | 'none';

export interface RetrievedSource {
  type: 'rag';
  /** chunk id */
  id: string;
  title: string;
  /** file path relative to the project folder */
  path: string;
  module: string;
  snippet: string;
  /** the chunk's text, as given to the model */
  content: string;
  /** fused score, 0..1 */
  score: number;
  confidence: RetrievalConfidence;
}

export interface RetrievalMetrics {
  /** how results were found: full-text only, or fused with vector similarity */
  method: 'fts' | 'fts+vector';
  candidates: number;
  returned: number;
  latencyMs: number;
  topScore: number;
}

export interface RetrievalResult {
  query: string;
  sources: RetrievedSource[];
  confidence: RetrievalConfidence;
  metrics: RetrievalMetrics;
}

/** Optional callbacks a caller may pass to follow a retrieval (rag_query turns them into progress). */
export interface RetrievalHooks {
  /** called once, when the candidates are gathered and ranking starts */
  onCandidates?(candidates: number): void;
}

export interface KnowledgeRetriever {
  modules(projectId: string): Promise<KnowledgeModuleInfo[]>;
  retrieve(projectId: string, query: string, topK: number, signal?: AbortSignal, hooks?: RetrievalHooks): Promise<RetrievalResult>;
}

export const KNOWLEDGE_RETRIEVER = Symbol('KNOWLEDGE_RETRIEVER');
