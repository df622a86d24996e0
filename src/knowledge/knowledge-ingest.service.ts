import { Inject, Injectable, Logger } from '@nestjs/common';
import { createHash } from 'node:crypto';
import * as path from 'node:path';
import { AppConfigService } from '../config/app-config.service';
import { resolveWorkspacePath, WorkspacePathError, type WorkspaceTarget } from '../common/workspace/workspace-path.util';
import { CHUNKER_VERSION, chunkDocument, type DocumentChunk } from './chunking/document-chunker';
import { KNOWLEDGE_EMBEDDING_PROVIDER, type EmbeddingProvider } from './embedding/embedding-provider.port';
import { findDocuments, readDocument, type SkippedFile } from './ingest/workspace-documents';
import { KnowledgeException, KnowledgeExceptionCode } from './knowledge.exception';
import { moduleOfPath } from './knowledge-module-name.util';
import { KnowledgeRepository } from './repositories/knowledge.repository';
import { ModuleSummaryCache } from './module-summary.cache';

export interface IngestRequest {
  projectId: string;
  /** module of every file ingested now; default: each file's top-level folder (see moduleOfPath) */
  module?: string;
  /** folder or file relative to the project folder; default the whole project */
  path?: string;
}

/** What an ingest did, counted in files (chunks where said). */
export interface IngestSummary {
  projectId: string;
  /** the ingested path, relative to the project folder (`.` = all of it) */
  path: string;
  /** files indexed after this ingest at `path` (added + updated + unchanged) */
  files: number;
  /** chunks of those files */
  chunks: number;
  added: number;
  /** changed content or module, or chunks (re-)embedded for the configured embedding model */
  updated: number;
  unchanged: number;
  /** files indexed before that no longer exist (or are no longer indexable) at `path` */
  removed: number;
  /** files not indexed and why; at most SKIPPED_LIST_MAX entries (see skippedTotal) */
  skipped: SkippedFile[];
  skippedTotal: number;
  /** modules of the files at `path`, sorted */
  modules: string[];
  /** chunks given a vector in this ingest */
  embedded: number;
  /** problems that did not stop the ingest (an embedding endpoint that failed) */
  warnings: string[];
  latencyMs: number;
}

/** Longest `skipped` list in a summary. */
export const SKIPPED_LIST_MAX = 200;

/**
 * Indexes the documents of a project folder into the knowledge base (docs/API.md
 * "Knowledge base"). Unchanged files (same bytes, chunker version, module and embedding model)
 * are skipped; a changed file's chunks are replaced in one transaction; files gone from the
 * ingested path are removed. Ingests of one project run one at a time in this instance (and
 * their writes are serialized across instances by an advisory lock in the repository).
 */
@Injectable()
export class KnowledgeIngestService {
  private readonly logger = new Logger('Knowledge');
  private readonly running = new Map<string, Promise<unknown>>();

  constructor(
    private readonly repo: KnowledgeRepository,
    private readonly config: AppConfigService,
    @Inject(KNOWLEDGE_EMBEDDING_PROVIDER) private readonly embeddings: EmbeddingProvider | null,
    private readonly moduleCache: ModuleSummaryCache,
  ) {}

  async ingest(req: IngestRequest, signal?: AbortSignal): Promise<IngestSummary> {
    const previous = this.running.get(req.projectId) ?? Promise.resolve();
    const run = previous.catch(() => undefined).then(() => this.run(req, signal));
    this.running.set(req.projectId, run);
    try {
      return await run;
    } finally {
      if (this.running.get(req.projectId) === run) this.running.delete(req.projectId);
      // also after a failure: the files stored before it are committed
      await this.moduleCache.changed(req.projectId);
    }
  }

  private async run(req: IngestRequest, signal?: AbortSignal): Promise<IngestSummary> {
    const started = performance.now();
    const target = await this.resolve(req.projectId, req.path ?? '.');
    const scope = path.relative(target.root, target.absolute).split(path.sep).join('/') || '.';
    const { documents, skipped } = await findDocuments(target, signal);
    const known = await this.repo.filesInScope(req.projectId, scope);
    const model = this.embeddings && (await this.repo.hasVectorColumn()) ? this.embeddings.model : null;

    const s = { files: 0, chunks: 0, added: 0, updated: 0, unchanged: 0, embedded: 0 };
    const keep = new Set(skipped.filter((f) => f.reason === 'limit').map((f) => f.path));
    const modules = new Set<string>();
    const warnings: string[] = [];
    for (const doc of documents) {
      signal?.throwIfAborted();
      const read = await readDocument(doc, target.root, { allowHardLinks: this.config.get('FILE_ALLOW_HARDLINKS') });
      if ('skip' in read) {
        skipped.push({ path: doc.relative, reason: read.skip });
        continue;
      }
      const module = req.module ?? moduleOfPath(doc.relative);
      const contentHash = createHash('sha256').update(`orion-knowledge-chunker:${CHUNKER_VERSION}\0`).update(read.bytes).digest('hex');
      const prev = known.get(doc.relative);
      keep.add(doc.relative);
      modules.add(module);
      s.files++;
      if (prev && prev.contentHash === contentHash && prev.module === module && (model === null || prev.embeddingModel === model)) {
        s.unchanged++;
        s.chunks += prev.chunks;
        continue;
      }
      const chunks = chunkDocument(read.bytes.toString('utf8'), doc.docType, path.posix.basename(doc.relative));
      const vectors = model ? await this.embed(chunks, doc.relative, warnings, signal) : null;
      await this.repo.replaceFile(
        {
          projectId: req.projectId,
          path: doc.relative,
          module,
          docType: doc.docType,
          contentHash,
          sizeBytes: read.bytes.length,
          chunks: chunks.length,
          embeddingModel: vectors ? model : null,
        },
        chunks.map((c, i) => ({
          chunkIndex: c.index,
          title: c.title,
          content: c.content,
          contentHash: createHash('sha256').update(c.title).update('\0').update(c.content).digest('hex'),
          embedding: vectors?.[i] ?? null,
        })),
      );
      if (prev) s.updated++;
      else s.added++;
      s.chunks += chunks.length;
      if (vectors) s.embedded += chunks.length;
    }
    const removed = await this.repo.removeFiles(
      req.projectId,
      [...known.keys()].filter((p) => !keep.has(p)),
    );
    return {
      projectId: req.projectId,
      path: scope,
      ...s,
      removed,
      skipped: skipped.slice(0, SKIPPED_LIST_MAX),
      skippedTotal: skipped.length,
      modules: [...modules].sort(),
      warnings,
      latencyMs: Math.round(performance.now() - started),
    };
  }

  /** The checked target, or a coded 400 (leaves the project) / 404 (missing). */
  private async resolve(projectId: string, requested: string): Promise<WorkspaceTarget> {
    let target: WorkspaceTarget;
    try {
      target = await resolveWorkspacePath(this.config.get('WORKSPACE_ROOT'), projectId, requested);
    } catch (err) {
      if (err instanceof WorkspacePathError) throw new KnowledgeException(KnowledgeExceptionCode.INVALID_PATH, err.message);
      throw err;
    }
    if (!target.rootExists) {
      throw new KnowledgeException(
        KnowledgeExceptionCode.PATH_NOT_FOUND,
        `project "${projectId}" has no folder in the workspace: create WORKSPACE_ROOT/${projectId} and put its documents there`,
      );
    }
    if (!target.exists) {
      throw new KnowledgeException(KnowledgeExceptionCode.PATH_NOT_FOUND, `"${target.relative}" does not exist in the folder of project "${projectId}"`);
    }
    return target;
  }

  /** Vectors of a file's chunks (title and text), or null when the endpoint fails (the file is then indexed for full-text only). */
  private async embed(chunks: DocumentChunk[], file: string, warnings: string[], signal?: AbortSignal): Promise<number[][] | null> {
    if (chunks.length === 0) return [];
    try {
      return await this.embeddings!.embed(
        chunks.map((c) => `${c.title}\n\n${c.content}`),
        signal,
      );
    } catch (err) {
      signal?.throwIfAborted();
      const message = `embedding ${file} failed (${(err as Error).message}); indexed for full-text search only, the next ingest retries`;
      this.logger.warn(message);
      if (warnings.length < 20) warnings.push(message);
      return null;
    }
  }
}
