import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The knowledge base behind `rag_query` (docs/API.md "Knowledge base"):
 *
 * - `knowledge_files`: one row per ingested file (content hash, module, doc type, chunk count, the
 *   embedding model its chunks were embedded with), so re-ingesting skips unchanged files,
 *   replaces changed ones and removes deleted ones.
 * - `knowledge_chunks`: the searchable pieces. `tsv` is a generated column: the title weighted
 *   'A' and the content 'B', both with the `english` text-search configuration (stemming and
 *   stop words: "installing" finds "install"). Generated columns with an explicit regconfig work
 *   on PostgreSQL 12+ (PGlite is 18, CI's server is 15). A GIN index serves `@@`.
 * - `embedding vector` exists only where pgvector is available: PGlite (the extension is created
 *   when the database opens) or a server with pgvector installed. It has no fixed dimension, so
 *   any embedding model fits; rows record `embedding_model` and searches compare only vectors of
 *   the configured model and the query's dimension (`vector_dims`). Without a fixed dimension no
 *   HNSW/IVFFlat index can be built: vector search is an exact scan of one project's rows, which
 *   is fine for documentation-sized corpora (tens of thousands of chunks). Without pgvector the
 *   column is absent and search is full-text only; to add it later, install pgvector and run
 *   `CREATE EXTENSION vector; ALTER TABLE knowledge_chunks ADD COLUMN embedding vector;`.
 */
export class KnowledgeChunks1763900000000 implements MigrationInterface {
  name = 'KnowledgeChunks1763900000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE knowledge_files (
      project_id varchar(64) NOT NULL,
      path text NOT NULL,
      module varchar(128) NOT NULL,
      doc_type varchar(16) NOT NULL,
      content_hash char(64) NOT NULL,
      size_bytes int NOT NULL,
      chunks int NOT NULL,
      embedding_model text,
      ingested_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (project_id, path))`);

    await q.query(`CREATE TABLE knowledge_chunks (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      project_id varchar(64) NOT NULL,
      module varchar(128) NOT NULL,
      path text NOT NULL,
      doc_type varchar(16) NOT NULL,
      title text NOT NULL,
      chunk_index int NOT NULL,
      content text NOT NULL,
      content_hash char(64) NOT NULL,
      tsv tsvector GENERATED ALWAYS AS (
        setweight(to_tsvector('english', title), 'A') || setweight(to_tsvector('english', content), 'B')
      ) STORED,
      embedding_model text,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      CONSTRAINT uq_knowledge_chunks_position UNIQUE (project_id, path, chunk_index),
      CONSTRAINT fk_knowledge_chunks_file FOREIGN KEY (project_id, path)
        REFERENCES knowledge_files (project_id, path) ON DELETE CASCADE)`);
    await q.query(`CREATE INDEX idx_knowledge_chunks_tsv ON knowledge_chunks USING GIN (tsv)`);
    await q.query(`CREATE INDEX idx_knowledge_chunks_project_module ON knowledge_chunks (project_id, module)`);

    if (await this.enableVector(q)) {
      await q.query(`ALTER TABLE knowledge_chunks ADD COLUMN embedding vector`);
    }
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE IF EXISTS knowledge_chunks`);
    await q.query(`DROP TABLE IF EXISTS knowledge_files`);
    // the vector extension stays: the database opener creates it on PGlite, and others may use it
  }

  /**
   * True when the `vector` type can be used: the extension is available on this server and
   * CREATE EXTENSION succeeded (it needs sufficient privileges). A failure is contained in a
   * savepoint so the migration's transaction goes on without the column.
   */
  private async enableVector(q: QueryRunner): Promise<boolean> {
    const available = await q.query(`SELECT 1 FROM pg_available_extensions WHERE name = 'vector'`);
    if (available.length === 0) return false;
    const inTransaction = q.isTransactionActive;
    if (inTransaction) await q.query(`SAVEPOINT knowledge_vector`);
    try {
      await q.query(`CREATE EXTENSION IF NOT EXISTS vector`);
      if (inTransaction) await q.query(`RELEASE SAVEPOINT knowledge_vector`);
      return true;
    } catch {
      if (inTransaction) await q.query(`ROLLBACK TO SAVEPOINT knowledge_vector`);
      return false;
    }
  }
}
