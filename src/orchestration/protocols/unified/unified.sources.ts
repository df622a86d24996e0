import type { RetrievalResult } from '../../../knowledge/knowledge-retriever.port';
import type { ToolRunResult, ToolSource } from '../../../tools/tool-definition';
import type { ProtocolEvent } from '../../protocol-event';

export type SourcesEvent = Extract<ProtocolEvent, { type: 'sources' }>;

/** Confidence of an answer with sources that used no retrieval (web only), as the issue decides. */
export const NO_RETRIEVAL_CONFIDENCE = 'high';
/** Confidence of a `sources` event with no sources (a tool-free turn, a retrieval that found nothing): there is none. */
export const NO_SOURCES_CONFIDENCE = 'none';
/** Confidence when rag_query was called but never said how sure it was (it failed, or an old tool). */
export const UNKNOWN_RAG_CONFIDENCE = 'low';

/**
 * What a collector has gathered, as plain JSON: a two-stage checkpoint keeps it, so a resumed
 * (or forked) leg's `sources` event still lists what the earlier legs retrieved.
 */
export interface SourcesSnapshot {
  data: ToolSource[];
  confidences: string[];
  ragCalls: number;
  metrics?: Record<string, unknown>;
}

const CONFIDENCE_RANK: Readonly<Record<string, number>> = { none: 0, low: 1, medium: 2, high: 3 };

/**
 * Collects the citations of one turn (issue #5, item 5) from the rag and web tools — any tool
 * result with `sources`, and the direct path's retrieval — and turns them into the turn's one
 * `sources` event.
 *
 * - Sources are deduplicated by url, else path, else type + title; a later duplicate with a
 *   higher score replaces the earlier one in place (first-seen order is kept).
 * - `confidence`: `none` when there are no sources (a tool-free turn, a retrieval that found
 *   nothing); when retrieval ran (rag_query or the direct path), the best confidence any
 *   retrieval reported (`low` when rag_query ran but reported none); otherwise (web sources
 *   only) `high`.
 * - `metrics`: the last retrieval's metrics, plus `ragCalls` when retrieval ran more than once;
 *   `null` when no retrieval reported metrics (a tool-free or web-only turn, a failed rag_query).
 */
export class SourcesCollector {
  private readonly byKey = new Map<string, ToolSource>();
  private readonly confidences: string[] = [];
  private ragCalls = 0;
  private lastMetrics: Record<string, unknown> | undefined;

  /** A collector that goes on from a snapshot (none: an empty one). */
  static from(snapshot?: SourcesSnapshot): SourcesCollector {
    const c = new SourcesCollector();
    if (!snapshot) return c;
    for (const s of snapshot.data) c.addSource(s);
    c.confidences.push(...snapshot.confidences);
    c.ragCalls = snapshot.ragCalls;
    c.lastMetrics = snapshot.metrics;
    return c;
  }

  snapshot(): SourcesSnapshot {
    return { data: [...this.byKey.values()], confidences: [...this.confidences], ragCalls: this.ragCalls, ...(this.lastMetrics ? { metrics: { ...this.lastMetrics } } : {}) };
  }

  /** Whether a tool result is one the turn's `sources` event reports: it cited something, or it was a retrieval. */
  static reports(toolName: string, result: ToolRunResult): boolean {
    return toolName === 'rag_query' || (result.sources ?? []).length > 0;
  }

  /** Takes one tool result (only its sources and, for rag, its confidence and metrics). */
  addToolResult(toolName: string, result: ToolRunResult): void {
    for (const s of result.sources ?? []) this.addSource(s);
    const isRag = toolName === 'rag_query' || (result.sources ?? []).some((s) => s.type === 'rag');
    if (!isRag) return;
    this.ragCalls += 1;
    const out = result.outcome === 'success' && !result.isError && isRecord(result.output) ? result.output : undefined;
    const confidence = typeof out?.confidence === 'string' ? out.confidence : bestOf((result.sources ?? []).map((s): unknown => s.confidence).filter(isString));
    if (confidence) this.confidences.push(confidence);
    else this.confidences.push(UNKNOWN_RAG_CONFIDENCE);
    if (isRecord(out?.metrics)) this.lastMetrics = out.metrics;
  }

  /** Takes the direct path's retrieval. The chunk text stays out of the event (it went to the model). */
  addRetrieval(r: RetrievalResult): void {
    this.ragCalls += 1;
    this.confidences.push(r.confidence);
    this.lastMetrics = { ...r.metrics };
    for (const s of r.sources) {
      const { content: _content, ...shown } = s;
      this.addSource({ ...shown, confidence: s.confidence === 'none' ? undefined : s.confidence });
    }
  }

  /** The `sources` event: every deduplicated source so far (an empty one, confidence `none`, for a tool-free turn). */
  toEvent(): SourcesEvent {
    const data = [...this.byKey.values()];
    const ragCount = data.filter((s) => s.type === 'rag').length;
    const webCount = data.filter((s) => s.type === 'web').length;
    const sourceTypes = [...new Set(data.map((s) => s.type))];
    const confidence = data.length === 0 ? NO_SOURCES_CONFIDENCE : this.ragCalls > 0 ? (bestOf(this.confidences) ?? UNKNOWN_RAG_CONFIDENCE) : NO_RETRIEVAL_CONFIDENCE;
    // always sent (docs/API.md lists it on every sources event): null says no retrieval ran
    const metrics = this.lastMetrics ? { ...this.lastMetrics, ...(this.ragCalls > 1 ? { ragCalls: this.ragCalls } : {}) } : null;
    return { type: 'sources', data, sourceTypes, ragCount, webCount, confidence, metrics };
  }

  private addSource(s: ToolSource): void {
    if (!s || typeof s !== 'object' || (s.type !== 'rag' && s.type !== 'web')) return;
    const key = s.url ? `url:${s.url}` : s.path ? `path:${s.path}` : `${s.type}:${s.title}`;
    const earlier = this.byKey.get(key);
    if (!earlier || (s.score ?? -Infinity) > (earlier.score ?? -Infinity)) this.byKey.set(key, clean(s));
  }
}

function bestOf(values: string[]): string | undefined {
  let best: string | undefined;
  for (const v of values) if (best === undefined || (CONFIDENCE_RANK[v] ?? -1) > (CONFIDENCE_RANK[best] ?? -1)) best = v;
  return best;
}

function clean(s: ToolSource): ToolSource {
  return Object.fromEntries(Object.entries(s).filter(([, v]) => v !== undefined)) as ToolSource;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return !!v && typeof v === 'object' && !Array.isArray(v);
}

function isString(v: unknown): v is string {
  return typeof v === 'string';
}
