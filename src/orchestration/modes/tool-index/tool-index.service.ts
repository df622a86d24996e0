import { Inject, Injectable, Logger, Optional, type OnModuleDestroy } from '@nestjs/common';
import { AppConfigService } from '../../../config/app-config.service';
import { KNOWLEDGE_EMBEDDING_PROVIDER, type EmbeddingProvider } from '../../../knowledge/embedding/embedding-provider.port';
import { summarizeParameters } from './tool-text.util';
import { assertUnreachable } from '../../../common/util/assert-unreachable.util';
import { deadline } from '../../../common/util/abort.util';
import { ToolRegistryService, type ToolRegistryChange } from '../../../tools/tool-registry.service';
import { ToolIndex, type ToolIndexHit } from './tool-index';
import { fuseTasks, searchMultiIntent, tasksOf } from './multi-intent-search';

/**
 * The NarrowTopK tool index, kept in step with ToolRegistryService: it indexes every tool
 * registered so far when it is constructed, then applies each registry change as it happens
 * (registered/changed → add or replace, unregistered → remove). Registry listeners run
 * synchronously, so a search right after `register`/`unregister` already sees the change.
 *
 * Availability is not the index's business: it ranks every registered tool, and callers
 * that must show only runnable tools pass a `filter` (or drop names afterwards).
 */
@Injectable()
export class ToolIndexService implements OnModuleDestroy {
  private readonly logger = new Logger('ToolIndex');
  private readonly index = new ToolIndex();
  private readonly unsubscribe: () => void;
  private following = false;
  private readonly enabled: boolean;
  /** tool name → its embedding (only with an embedding model); kept in memory like the index */
  private readonly vectors = new Map<string, number[]>();
  private readonly toEmbed = new Map<string, string>();
  private embedTimer: NodeJS.Timeout | null = null;
  private embedding: Promise<void> = Promise.resolve();

  constructor(
    registry: ToolRegistryService,
    @Optional() config?: AppConfigService,
    @Optional() @Inject(KNOWLEDGE_EMBEDDING_PROVIDER) private readonly embedder?: EmbeddingProvider | null,
  ) {
    this.enabled = config?.get('TOOL_INDEX_ENABLED') ?? true;
    // subscribe first, then seed: nothing can register in between (both run synchronously)
    this.unsubscribe = registry.onChange((change) => this.apply(change));
    for (const tool of registry.all()) {
      this.index.add(tool);
      this.queueEmbedding(tool);
    }
    this.following = true;
    // no count logged here: the built-ins register after this runs (OrchestrationService logs
    // the index once every module has started)
  }

  /** Whether NarrowTopK fuses BM25 with an embedding model (LLM_EMBEDDING_MODEL). */
  usesEmbeddings(): boolean {
    return !!this.embedder;
  }

  /** True while the index follows the registry (from construction until shutdown) and TOOL_INDEX_ENABLED is on. */
  isEnabled(): boolean {
    return this.enabled && this.following;
  }

  /** Number of tools indexed. */
  get size(): number {
    return this.index.size;
  }

  has(name: string): boolean {
    return this.index.has(name);
  }

  /**
   * The best `k` tools for `query`, best first, absolute scores 0..1 (ToolIndex.search: the same
   * whatever the other candidates), none below `minScore`. `filter` (e.g. "available now") is applied before the top
   * `k` is taken, so it does not shorten the list. A request with several tasks is searched
   * per task as well and the lists fused (searchMultiIntent); one task ranks as ToolIndex.search.
   */
  search(query: string, k: number, minScore = 0, filter?: (name: string) => boolean): ToolIndexHit[] {
    return searchMultiIntent(this.index, query, k, minScore, filter).hits;
  }

  /**
   * NarrowTopK's retrieval. BM25 alone without an embedding model. With one, each tool's
   * text is embedded once (on registration/change) and, per search, the request and each of its
   * tasks (one embedding call). Each text is ranked by fusing the two signals linearly over the
   * union of its BM25 and cosine candidates: score = (BM25 score + cosine) / 2, both absolute and
   * in 0..1, so the fused score is absolute too, bounded by 1, `minScore` keeps its meaning and a
   * paraphrase BM25 misses can still be found. (Rescaling the
   * cosine between the candidates' lowest and highest was measured too: worse, bench/README.md.)
   * The per-text lists are fused across tasks as `search` fuses them (fuseTasks), so a request
   * with several tasks keeps one place per task; fusing only the whole request's text let the
   * most salient task take every place. A failed
   * or slow embedding call (EMBED_QUERY_TIMEOUT_MS) falls back to BM25 for that search.
   */
  async retrieve(query: string, k: number, minScore = 0, filter?: (name: string) => boolean, signal?: AbortSignal): Promise<ToolIndexHit[]> {
    if (!this.embedder || this.vectors.size === 0) return this.search(query, k, minScore, filter);
    const tasks = tasksOf(query);
    const texts = tasks.length > 1 ? [query, ...tasks] : [query];
    let vecs: number[][] | undefined;
    const limit = deadline(signal, ToolIndexService.EMBED_QUERY_TIMEOUT_MS, { unref: true });
    try {
      vecs = await this.embedder.embed(texts, limit.signal);
    } catch (err) {
      this.logger.warn(`query embedding failed, BM25 only: ${(err as Error).message}`);
    } finally {
      limit.dispose();
    }
    if (!vecs || vecs.length !== texts.length) return this.search(query, k, minScore, filter);
    const byText = new Map(texts.map((t, i) => [t, vecs[i]] as const));
    return fuseTasks(query, tasks, k, (text, limit) => this.hybrid(text, byText.get(text)!, limit, minScore, filter)).hits;
  }

  /** One text ranked by BM25 and cosine together (see `retrieve`). */
  private hybrid(text: string, q: number[], k: number, minScore: number, filter?: (name: string) => boolean): ToolIndexHit[] {
    const wide = Math.max(k * 4, 20);
    const bm = new Map(this.index.search(text, wide, 0, filter).map((h) => [h.name, h] as const));
    const cos: Array<[string, number]> = [];
    for (const [name, v] of this.vectors) if ((!filter || filter(name)) && this.index.has(name)) cos.push([name, cosine(q, v)]);
    cos.sort((a, b) => b[1] - a[1]);
    const cosOf = new Map(cos);
    const names = new Set([...bm.keys(), ...cos.slice(0, wide).map(([n]) => n)]);
    return [...names]
      .map((name) => {
        return { name, score: ((bm.get(name)?.score ?? 0) + Math.max(0, cosOf.get(name) ?? 0)) / 2, origin: bm.get(name)?.origin ?? this.originOf(name) };
      })
      .filter((h) => h.score >= minScore && h.score > 0)
      .sort((a, b) => b.score - a.score || (a.name < b.name ? -1 : 1))
      .slice(0, Math.max(0, Math.floor(k)));
  }

  /** Waits until pending tool embeddings are stored (tests, warm-up). */
  async embeddingsSettled(): Promise<void> {
    if (this.embedTimer) {
      clearTimeout(this.embedTimer);
      this.embedTimer = null;
      this.flushEmbeddings();
    }
    await this.embedding;
  }

  /** Query embeddings slower than this fall back to BM25 for that search. */
  static readonly EMBED_QUERY_TIMEOUT_MS = 2000;

  onModuleDestroy(): void {
    this.unsubscribe();
    this.following = false;
    if (this.embedTimer) clearTimeout(this.embedTimer);
  }

  private originOf(name: string): ToolIndexHit['origin'] {
    return this.index.search(name, 1, 0, (n) => n === name)[0]?.origin ?? 'builtin';
  }

  /** Embeds changed tools in batches, shortly after the registry settles. */
  private queueEmbedding(tool: { name: string; description: string; parameters: Record<string, unknown> }): void {
    if (!this.embedder) return;
    const p = summarizeParameters(tool.parameters);
    this.toEmbed.set(tool.name, `${tool.name.replace(/[_.-]+/g, ' ')}: ${tool.description}\n${p.names} ${p.enums}\n${p.text}`.slice(0, 4000));
    this.embedTimer ??= setTimeout(() => {
      this.embedTimer = null;
      this.flushEmbeddings();
    }, 50);
    this.embedTimer.unref?.();
  }

  private flushEmbeddings(): void {
    const batch = [...this.toEmbed.entries()];
    this.toEmbed.clear();
    if (batch.length === 0 || !this.embedder) return;
    const embedder = this.embedder;
    this.embedding = this.embedding.then(async () => {
      for (let i = 0; i < batch.length; i += 64) {
        const part = batch.slice(i, i + 64);
        try {
          const vecs = await embedder.embed(part.map(([, text]) => text));
          part.forEach(([name], j) => {
            if (this.index.has(name) && vecs[j]) this.vectors.set(name, vecs[j]);
          });
        } catch (err) {
          this.logger.warn(`could not embed ${part.length} tools (BM25 still finds them): ${(err as Error).message}`);
        }
      }
    });
  }

  private apply(change: ToolRegistryChange): void {
    switch (change.kind) {
      case 'registered':
      case 'changed':
        this.index.replace(change.tool);
        this.vectors.delete(change.tool.name);
        this.queueEmbedding(change.tool);
        return;
      case 'unregistered':
        this.index.remove(change.name);
        this.vectors.delete(change.name);
        this.toEmbed.delete(change.name);
        return;
      default:
        assertUnreachable(change, 'registry change');
    }
  }
}

function cosine(a: number[], b: number[]): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    dot += a[i] * b[i];
    na += a[i] * a[i];
    nb += b[i] * b[i];
  }
  return na > 0 && nb > 0 ? dot / Math.sqrt(na * nb) : 0;
}
