import type { KnowledgeRetriever, RetrievalConfidence, RetrievalMetrics, RetrievedSource } from '../../knowledge/knowledge-retriever.port';
import type { ToolDefinition, ToolExecuteResult, ToolExecutionContext, ToolSource } from '../tool-definition';

export const RAG_DEFAULT_TOP_K = 5;
export const RAG_MAX_TOP_K = 20;
export const RAG_MAX_QUERY_CHARS = 2000;

/** One retrieved chunk as the model sees it. */
export type RagQueryResultItem = Pick<RetrievedSource, 'title' | 'path' | 'module' | 'snippet' | 'content' | 'score'>;

/** What the model receives. */
export interface RagQueryOutput {
  query: string;
  results: RagQueryResultItem[];
  confidence: RetrievalConfidence;
  metrics: RetrievalMetrics;
}

/**
 * `rag_query { query: string, topK?: integer = 5 }`: retrieval only, no generation. Searches the
 * project's knowledge base (what `POST /api/knowledge/ingest` indexed) and returns the best
 * chunks with their scores, a confidence and metrics; the chunks also go out as `rag` sources.
 * An empty knowledge base is no error: no results, confidence `none`.
 *
 * Progress: `searching` when it starts, `ranking` (with the candidate count) once the candidates
 * are gathered. A plain class over the KNOWLEDGE_RETRIEVER port, registered as a factory provider.
 */
export class RagQueryTool implements ToolDefinition {
  readonly name = 'rag_query';
  readonly description =
    "Search the project's knowledge base (its indexed Markdown and text documents) for passages relevant to a question. " +
    'Returns the best passages with title, path, module, snippet, full text and a 0..1 score, plus an overall confidence ' +
    '(high, medium, low, or none when nothing matched). Retrieval only: answer from the passages yourself and cite their paths.';
  readonly origin = 'builtin' as const;
  /** it only reads: a call cut off by an instance's death runs again on the instance that continues the turn */
  readonly hints = { readOnly: true };
  readonly parameters: Record<string, unknown> = {
    type: 'object',
    properties: {
      query: {
        type: 'string',
        minLength: 1,
        maxLength: RAG_MAX_QUERY_CHARS,
        description: 'The question or keywords to search for, e.g. "how do I install the CLI".',
      },
      topK: {
        type: 'integer',
        minimum: 1,
        maximum: RAG_MAX_TOP_K,
        default: RAG_DEFAULT_TOP_K,
        description: `Number of passages to return (1..${RAG_MAX_TOP_K}).`,
      },
    },
    required: ['query'],
    additionalProperties: false,
  };

  constructor(private readonly retriever: KnowledgeRetriever) {}

  isAvailable(): boolean {
    return true;
  }

  async execute(args: Record<string, unknown>, ctx: ToolExecutionContext): Promise<ToolExecuteResult> {
    const query = String(args.query ?? '');
    const topK = typeof args.topK === 'number' ? args.topK : RAG_DEFAULT_TOP_K;
    ctx.progress?.({ stage: 'searching', message: 'Searching the knowledge base…' });
    let ranking = false;
    const onCandidates = (candidates: number) => {
      if (ranking) return;
      ranking = true;
      ctx.progress?.({ stage: 'ranking', message: 'Ranking results…', metadata: { candidates } });
    };
    const result = await this.retriever.retrieve(ctx.projectId, query, topK, ctx.signal, { onCandidates });
    onCandidates(result.metrics.candidates); // a retriever that does not report candidates itself

    const output: RagQueryOutput = {
      query: result.query,
      results: result.sources.map((s) => ({ title: s.title, path: s.path, module: s.module, snippet: s.snippet, content: s.content, score: s.score })),
      confidence: result.confidence,
      metrics: result.metrics,
    };
    const sources: ToolSource[] = result.sources.map((s) => ({
      type: 'rag',
      title: s.title,
      path: s.path,
      snippet: s.snippet,
      score: s.score,
      ...(s.confidence === 'none' ? {} : { confidence: s.confidence }),
      module: s.module,
      id: s.id,
      chunkId: s.id,
    }));
    return { output, sources };
  }
}
