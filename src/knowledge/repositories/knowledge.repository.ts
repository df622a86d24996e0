import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, EntityManager } from 'typeorm';
import type { DocType } from '../chunking/doc-type';
import type { TextHit, VectorHit } from '../retrieval/retrieval-scoring';

/** What the knowledge base remembers of an ingested file. */
export interface KnowledgeFileRecord {
  projectId: string;
  /** relative to the project folder, `/`-separated */
  path: string;
  module: string;
  docType: DocType;
  /** sha256 (hex) of the chunker version and the file's bytes */
  contentHash: string;
  sizeBytes: number;
  chunks: number;
  /** model the chunks were embedded with; null when they have no vectors */
  embeddingModel: string | null;
}

export interface KnowledgeChunkRecord {
  chunkIndex: number;
  title: string;
  content: string;
  /** sha256 (hex) of title and content */
  contentHash: string;
  /** null when the chunk has no vector */
  embedding: number[] | null;
}

export interface ModuleSummaryRow {
  module: string;
  docType: string;
  chunks: number;
}

export interface ChunkRow {
  id: string;
  title: string;
  path: string;
  module: string;
  content: string;
  snippet: string;
}

/** Text-search configuration of the tsv column (see the 1763900000000 migration); queries must use the same. */
export const TEXT_SEARCH_CONFIG = 'english';

/**
 * The query's lexemes (as the tsv column stores them) and an OR query of them. Each lexeme is
 * quoted for tsquery input (quotes and backslashes doubled), so punctuation inside a lexeme
 * (`example.com/a-b`) is never read as an operator. OR, not AND: a natural question ("how do I
 * install it on linux") must find chunks holding only some of its words; ranking and coverage
 * order them. `query` is NULL when the question has no searchable words (only stop words).
 */
const QUERY_CTE = `q AS (
    SELECT lex, CASE WHEN cardinality(lex) = 0 THEN NULL ELSE array_to_string(ARRAY(
      SELECT chr(39) || replace(replace(l, chr(92), chr(92) || chr(92)), chr(39), chr(39) || chr(39)) || chr(39) FROM unnest(lex) AS l
    ), ' | ')::tsquery END AS query
    FROM (SELECT tsvector_to_array(to_tsvector('${TEXT_SEARCH_CONFIG}', $2::text)) AS lex) AS parsed)`;

/** ts_headline options: up to two fragments of 10–30 words around the matches, no markup added. */
const HEADLINE_OPTIONS = 'MaxWords=30, MinWords=10, ShortWord=2, MaxFragments=2, FragmentDelimiter=" … ", StartSel="", StopSel=""';

/**
 * The only place that touches the knowledge tables. Raw SQL through the DataSource; writes that
 * must be atomic run in one transaction through its manager (PGlite has one connection: a
 * DataSource query inside a transaction would wait forever).
 */
@Injectable()
export class KnowledgeRepository {
  private vectorColumn?: Promise<boolean>;

  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /** Whether knowledge_chunks has the optional `embedding vector` column (checked once). */
  hasVectorColumn(): Promise<boolean> {
    this.vectorColumn ??= this.dataSource
      .query(
        `SELECT 1 FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = 'knowledge_chunks' AND column_name = 'embedding'`,
      )
      .then((rows: unknown[]) => rows.length > 0)
      .catch((err: unknown) => {
        this.vectorColumn = undefined; // a failed check is asked again next time
        throw err;
      });
    return this.vectorColumn;
  }

  /** Files of a project at `scope` (`.` = all, a folder = everything under it, or one file). */
  async filesInScope(projectId: string, scope: string): Promise<Map<string, KnowledgeFileRecord>> {
    const rows: Array<Record<string, unknown>> = await this.dataSource.query(
      `SELECT path, module, doc_type, content_hash, size_bytes, chunks, embedding_model FROM knowledge_files
       WHERE project_id = $1 AND ($2 = '.' OR path = $2 OR path LIKE $3 ESCAPE '\\')`,
      [projectId, scope, `${escapeLike(scope)}/%`],
    );
    return new Map(
      rows.map((r) => [
        String(r.path),
        {
          projectId,
          path: String(r.path),
          module: String(r.module),
          docType: String(r.doc_type) as DocType,
          contentHash: String(r.content_hash),
          sizeBytes: Number(r.size_bytes),
          chunks: Number(r.chunks),
          embeddingModel: (r.embedding_model as string | null) ?? null,
        },
      ]),
    );
  }

  /**
   * Stores a file and its chunks in one transaction: the file row is upserted, chunks are
   * upserted by position (rows whose title, content, module and model did not change are left
   * alone, so they keep their id and timestamps), and positions past the new last chunk are
   * deleted. A transaction-scoped advisory lock on the project serializes writers across
   * instances.
   */
  async replaceFile(file: KnowledgeFileRecord, chunks: readonly KnowledgeChunkRecord[]): Promise<void> {
    const vector = await this.hasVectorColumn();
    await this.dataSource.transaction(async (m) => {
      await lockProject(m, file.projectId);
      await m.query(
        `INSERT INTO knowledge_files (project_id, path, module, doc_type, content_hash, size_bytes, chunks, embedding_model, ingested_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, now())
         ON CONFLICT (project_id, path) DO UPDATE SET module = EXCLUDED.module, doc_type = EXCLUDED.doc_type,
           content_hash = EXCLUDED.content_hash, size_bytes = EXCLUDED.size_bytes, chunks = EXCLUDED.chunks,
           embedding_model = EXCLUDED.embedding_model, ingested_at = now()`,
        [file.projectId, file.path, file.module, file.docType, file.contentHash, file.sizeBytes, chunks.length, file.embeddingModel],
      );
      // 9–10 parameters a row; 200 rows stay far below PostgreSQL's 65,535-parameter limit
      for (let i = 0; i < chunks.length; i += 200) {
        await upsertChunks(m, file, chunks.slice(i, i + 200), vector);
      }
      await m.query(`DELETE FROM knowledge_chunks WHERE project_id = $1 AND path = $2 AND chunk_index >= $3`, [file.projectId, file.path, chunks.length]);
    });
  }

  /** Forgets files (their chunks go with them: ON DELETE CASCADE). Returns how many were removed. */
  async removeFiles(projectId: string, paths: readonly string[]): Promise<number> {
    if (paths.length === 0) return 0;
    return this.dataSource.transaction(async (m) => {
      await lockProject(m, projectId);
      // counted by a SELECT: for a bare DELETE, TypeORM returns [rows, rowCount] instead of rows
      const [{ n }] = await m.query(
        `WITH gone AS (DELETE FROM knowledge_files WHERE project_id = $1 AND path = ANY($2::text[]) RETURNING path) SELECT count(*)::int AS n FROM gone`,
        [projectId, paths],
      );
      return Number(n);
    });
  }

  /** Modules of a project, by name, with their chunk counts and most common doc type. */
  async moduleSummaries(projectId: string): Promise<ModuleSummaryRow[]> {
    const rows: Array<Record<string, unknown>> = await this.dataSource.query(
      `SELECT module, mode() WITHIN GROUP (ORDER BY doc_type) AS doc_type, count(*)::int AS chunks
       FROM knowledge_chunks WHERE project_id = $1 GROUP BY module ORDER BY module`,
      [projectId],
    );
    return rows.map((r) => ({ module: String(r.module), docType: String(r.doc_type), chunks: Number(r.chunks) }));
  }

  /** Full-text candidates (best ts_rank_cd first) and how many searchable terms the query has. */
  async searchText(projectId: string, query: string, limit: number): Promise<{ terms: number; hits: TextHit[] }> {
    const rows: Array<Record<string, unknown>> = await this.dataSource.query(
      `WITH ${QUERY_CTE}
       SELECT cardinality(q.lex) AS terms, h.id, h.rank, h.matched FROM q
       LEFT JOIN LATERAL (
         SELECT c.id, ts_rank_cd(c.tsv, q.query, 1) AS rank,
           (SELECT count(*) FROM unnest(tsvector_to_array(c.tsv)) AS t(l) WHERE l = ANY(q.lex))::int AS matched
         FROM knowledge_chunks c WHERE c.project_id = $1 AND c.tsv @@ q.query
         ORDER BY rank DESC, c.path, c.chunk_index LIMIT $3
       ) AS h ON true`,
      [projectId, query, limit],
    );
    const terms = rows.length > 0 ? Number(rows[0].terms ?? 0) : 0;
    const hits = rows
      .filter((r) => r.id !== null && r.id !== undefined)
      .map((r) => ({ id: String(r.id), rank: Number(r.rank), matched: Number(r.matched), terms }));
    return { terms, hits };
  }

  /** Nearest chunks by cosine distance among those embedded with `model` at the vector's dimension. */
  async searchVector(projectId: string, embedding: readonly number[], model: string, limit: number): Promise<VectorHit[]> {
    const rows: Array<Record<string, unknown>> = await this.dataSource.query(
      `SELECT id, 1 - (embedding <=> $2::vector) AS similarity FROM knowledge_chunks
       WHERE project_id = $1 AND embedding IS NOT NULL AND embedding_model = $3 AND vector_dims(embedding) = $4
       ORDER BY embedding <=> $2::vector, id LIMIT $5`,
      [projectId, toVectorLiteral(embedding), model, embedding.length, limit],
    );
    return rows.map((r) => ({ id: String(r.id), similarity: Number(r.similarity) }));
  }

  /** The chunks `ids` (in any order) with a snippet around the query's words. */
  async chunksWithSnippets(projectId: string, query: string, ids: readonly string[]): Promise<Map<string, ChunkRow>> {
    if (ids.length === 0) return new Map();
    const rows: Array<Record<string, unknown>> = await this.dataSource.query(
      `WITH ${QUERY_CTE}
       SELECT c.id, c.title, c.path, c.module, c.content,
         CASE WHEN q.query IS NULL THEN left(c.content, 240)
              ELSE ts_headline('${TEXT_SEARCH_CONFIG}', c.content, q.query, '${HEADLINE_OPTIONS}') END AS snippet
       FROM knowledge_chunks c, q WHERE c.project_id = $1 AND c.id = ANY($3::uuid[])`,
      [projectId, query, ids],
    );
    return new Map(
      rows.map((r) => [
        String(r.id),
        { id: String(r.id), title: String(r.title), path: String(r.path), module: String(r.module), content: String(r.content), snippet: String(r.snippet ?? '') },
      ]),
    );
  }
}

async function lockProject(m: EntityManager, projectId: string): Promise<void> {
  await m.query(`SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, [`orion:knowledge:${projectId}`]);
}

async function upsertChunks(m: EntityManager, file: KnowledgeFileRecord, chunks: readonly KnowledgeChunkRecord[], vector: boolean): Promise<void> {
  if (chunks.length === 0) return;
  const params: unknown[] = [];
  const tuples = chunks.map((c) => {
    const row: unknown[] = [file.projectId, file.module, file.path, file.docType, c.title, c.chunkIndex, c.content, c.contentHash];
    row.push(c.embedding ? file.embeddingModel : null);
    if (vector) row.push(c.embedding ? toVectorLiteral(c.embedding) : null);
    const first = params.length + 1;
    params.push(...row);
    const placeholders = row.map((_, j) => `$${first + j}${vector && j === row.length - 1 ? '::vector' : ''}`);
    return `(${placeholders.join(', ')})`;
  });
  const columns = `project_id, module, path, doc_type, title, chunk_index, content, content_hash, embedding_model${vector ? ', embedding' : ''}`;
  await m.query(
    `INSERT INTO knowledge_chunks (${columns}) VALUES ${tuples.join(', ')}
     ON CONFLICT (project_id, path, chunk_index) DO UPDATE SET module = EXCLUDED.module, doc_type = EXCLUDED.doc_type,
       title = EXCLUDED.title, content = EXCLUDED.content, content_hash = EXCLUDED.content_hash,
       embedding_model = EXCLUDED.embedding_model${vector ? ', embedding = EXCLUDED.embedding' : ''}, updated_at = now()
     WHERE knowledge_chunks.content_hash IS DISTINCT FROM EXCLUDED.content_hash
        OR knowledge_chunks.module IS DISTINCT FROM EXCLUDED.module
        OR knowledge_chunks.embedding_model IS DISTINCT FROM EXCLUDED.embedding_model`,
    params,
  );
}

/** pgvector's text form: `[0.1,0.2,…]`. */
function toVectorLiteral(v: readonly number[]): string {
  return `[${v.join(',')}]`;
}

/** Escapes LIKE's wildcards (with `\` as the escape character). */
function escapeLike(s: string): string {
  return s.replace(/[\\%_]/g, (c) => `\\${c}`);
}
