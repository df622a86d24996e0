import type { INestApplicationContext } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { DataSource } from 'typeorm';
import { AppConfigModule } from '../../src/config/config.module';
import { DatabaseModule } from '../../src/database/database.module';
import { KnowledgeChunks1763900000000 } from '../../src/database/migrations/1763900000000-knowledge-chunks';
import { createTestDatabase, onPostgres } from '../support/db';

/** The knowledge migration on the real database: optional vector column, generated tsv, down and up again. */
describe('knowledge_chunks migration (medium)', () => {
  let ctx: INestApplicationContext;
  let drop: () => Promise<void>;
  let ds: DataSource;

  const columns = async (): Promise<string[]> =>
    (await ds.query(`SELECT column_name FROM information_schema.columns WHERE table_name = 'knowledge_chunks' ORDER BY column_name`)).map(
      (r: { column_name: string }) => r.column_name,
    );
  const vectorAvailable = async (): Promise<boolean> => (await ds.query(`SELECT 1 FROM pg_available_extensions WHERE name = 'vector'`)).length > 0;

  beforeAll(async () => {
    const db = await createTestDatabase();
    drop = db.drop;
    const moduleRef = await Test.createTestingModule({
      imports: [AppConfigModule.forRoot({ DATABASE_URL: db.url, LLM_PROVIDER: 'replay', LOG_LEVEL: 'error' }), DatabaseModule],
    }).compile();
    ctx = await moduleRef.init();
    ds = ctx.get(DataSource);
  });
  afterAll(async () => {
    await ctx?.close();
    await drop?.();
  });

  it('has the embedding column exactly where pgvector is available', async () => {
    const available = await vectorAvailable();
    if (!onPostgres()) expect(available).toBe(true); // PGlite ships pgvector
    expect((await columns()).includes('embedding')).toBe(available);
    expect(await columns()).toEqual(
      expect.arrayContaining(['id', 'project_id', 'module', 'path', 'doc_type', 'title', 'chunk_index', 'content', 'content_hash', 'tsv', 'created_at', 'updated_at']),
    );
  });

  it('tsv is generated from the weighted, stemmed title and content', async () => {
    await ds.query(`INSERT INTO knowledge_files (project_id, path, module, doc_type, content_hash, size_bytes, chunks) VALUES ('p', 'a.md', 'general', 'md', repeat('0', 64), 1, 1)`);
    await ds.query(
      `INSERT INTO knowledge_chunks (project_id, module, path, doc_type, title, chunk_index, content, content_hash) VALUES ('p', 'general', 'a.md', 'md', 'Installing', 0, 'The installers', repeat('0', 64))`,
    );
    const [{ tsv }] = await ds.query(`SELECT tsv::text AS tsv FROM knowledge_chunks WHERE path = 'a.md'`);
    expect(tsv).toBe(`'instal':1A,3B`);
    // unique position, and chunks go with their file
    await expect(
      ds.query(`INSERT INTO knowledge_chunks (project_id, module, path, doc_type, title, chunk_index, content, content_hash) VALUES ('p', 'general', 'a.md', 'md', 't', 0, 'c', repeat('0', 64))`),
    ).rejects.toThrow();
    await ds.query(`DELETE FROM knowledge_files WHERE project_id = 'p'`);
    expect(await ds.query(`SELECT id FROM knowledge_chunks WHERE project_id = 'p'`)).toEqual([]);
  });

  it('down drops both tables and up recreates them', async () => {
    const migration = new KnowledgeChunks1763900000000();
    const before = await columns();
    const qr = ds.createQueryRunner();
    try {
      await qr.startTransaction();
      await migration.down(qr);
      expect(await qr.query(`SELECT to_regclass('knowledge_chunks') AS t, to_regclass('knowledge_files') AS f`)).toEqual([{ t: null, f: null }]);
      await migration.up(qr);
      await qr.commitTransaction();
    } catch (err) {
      if (qr.isTransactionActive) await qr.rollbackTransaction();
      throw err;
    } finally {
      await qr.release();
    }
    expect(await columns()).toEqual(before);
  });
});
