import { linkSync, mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { INestApplicationContext } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { DataSource } from 'typeorm';
import { AppConfigModule } from '../../src/config/config.module';
import { DatabaseModule } from '../../src/database/database.module';
import { KNOWLEDGE_EMBEDDING_PROVIDER } from '../../src/knowledge/embedding/embedding-provider.port';
import { KnowledgeException, KnowledgeExceptionCode } from '../../src/knowledge/knowledge.exception';
import { KnowledgeIngestService } from '../../src/knowledge/knowledge-ingest.service';
import { KnowledgeModule } from '../../src/knowledge/knowledge.module';
import { KnowledgeService } from '../../src/knowledge/knowledge.service';
import { INGEST_MAX_FILE_BYTES } from '../../src/knowledge/ingest/workspace-documents';
import { createTestDatabase } from '../support/db';

/** Ingest on the real database (PGlite, or PostgreSQL on the DATABASE_URL pass): counts, skips, re-ingest, removal, containment. */
describe('knowledge ingest (medium)', () => {
  let ctx: INestApplicationContext;
  let drop: () => Promise<void>;
  let ws: string;
  let ingest: KnowledgeIngestService;
  let knowledge: KnowledgeService;
  let ds: DataSource;
  const P = 'proj';
  const file = (rel: string, text: string | Buffer) => {
    const abs = join(ws, P, rel);
    mkdirSync(join(abs, '..'), { recursive: true });
    writeFileSync(abs, text);
  };
  const chunkRows = async (path: string): Promise<Array<{ id: string; chunk_index: number; content: string; created_at: Date }>> =>
    ds.query(`SELECT id, chunk_index, content, created_at FROM knowledge_chunks WHERE project_id = $1 AND path = $2 ORDER BY chunk_index`, [P, path]);

  beforeAll(async () => {
    ws = realpathSync(mkdtempSync(join(tmpdir(), 'orion-kb-')));
    const db = await createTestDatabase();
    drop = db.drop;
    const moduleRef = await Test.createTestingModule({
      imports: [AppConfigModule.forRoot({ DATABASE_URL: db.url, WORKSPACE_ROOT: ws, LLM_PROVIDER: 'replay', LOG_LEVEL: 'error' }), DatabaseModule, KnowledgeModule],
    })
      .overrideProvider(KNOWLEDGE_EMBEDDING_PROVIDER)
      .useValue(null)
      .compile();
    ctx = await moduleRef.init();
    ingest = ctx.get(KnowledgeIngestService);
    knowledge = ctx.get(KnowledgeService);
    ds = ctx.get(DataSource);

    file('README.md', '# Orion\n\nOrion runs LLM tool-calling turns.\n');
    file('install/guide.md', '# Installation\n\nInstall with npm.\n\n## Docker\n\nRun the container.\n');
    file('roadmap/2027.md', '# Roadmap\n\nQ1: tracing. Q2: plugins.\n');
    file('api/reference.md', '# API\n\n## Authentication\n\nSend a bearer token.\n');
    file('api/errors.txt', 'E001 bad request\nE002 unauthorized\n');
    file('faq/faq.rst', 'FAQ\n===\n\nIs it free?\n-----------\n\nYes.\n');
    file('image.png', Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 0, 0]));
    file('api/blob.md', Buffer.from('# Looks like text\n\0\0binary'));
    file('api/huge.md', 'a'.repeat(INGEST_MAX_FILE_BYTES + 1));
    file('.hidden/secret.md', '# Secret\n\ndo not index\n');
    file('.env.md', 'TOKEN=1');
    file('node_modules/pkg/README.md', '# Dependency\n\nnot ours\n');
    mkdirSync(join(ws, 'outside'), { recursive: true });
    writeFileSync(join(ws, 'outside', 'leak.md'), '# Leak\n\noutside secret\n');
    symlinkSync(join(ws, 'outside'), join(ws, P, 'outlink'));
    symlinkSync(join(ws, 'outside', 'leak.md'), join(ws, P, 'leak.md'));
  });

  afterAll(async () => {
    await ctx?.close();
    await drop?.();
    rmSync(ws, { recursive: true, force: true });
  });

  it('indexes the supported documents, one module per top-level folder, and says what it skipped', async () => {
    const s = await ingest.ingest({ projectId: P });
    expect(s).toMatchObject({ projectId: P, path: '.', files: 6, added: 6, updated: 0, unchanged: 0, removed: 0, embedded: 0, warnings: [] });
    expect(s.modules).toEqual(['api', 'faq', 'general', 'install', 'roadmap']);
    expect(s.skipped).toEqual(
      expect.arrayContaining([
        { path: 'api/blob.md', reason: 'binary' },
        { path: 'api/huge.md', reason: 'too_large' },
        { path: 'outlink', reason: 'symlink' },
        { path: 'leak.md', reason: 'symlink' },
      ]),
    );
    expect(s.skipped).toHaveLength(4); // image.png, dotfiles and node_modules are ignored silently
    const paths: Array<{ path: string }> = await ds.query(`SELECT DISTINCT path FROM knowledge_chunks WHERE project_id = $1 ORDER BY path`, [P]);
    expect(paths.map((r) => r.path)).toEqual(['README.md', 'api/errors.txt', 'api/reference.md', 'faq/faq.rst', 'install/guide.md', 'roadmap/2027.md']);
    const [{ n }] = await ds.query(`SELECT count(*)::int AS n FROM knowledge_chunks WHERE content ILIKE '%secret%' OR content ILIKE '%dependency%'`);
    expect(n).toBe(0);
    expect(s.chunks).toBe((await ds.query(`SELECT count(*)::int AS n FROM knowledge_chunks WHERE project_id = $1`, [P]))[0].n);
  });

  it('lists modules with display names, dominant doc type and chunk counts', async () => {
    const modules = await knowledge.modules(P);
    expect(modules.map((m) => [m.name, m.displayName, m.docType])).toEqual([
      ['api', 'API', 'md'],
      ['faq', 'FAQ', 'rst'],
      ['general', 'General', 'md'],
      ['install', 'Install', 'md'],
      ['roadmap', 'Roadmap', 'md'],
    ]);
    expect(modules.find((m) => m.name === 'api')!.chunks).toBe(2);
    expect(await knowledge.modules('nobody')).toEqual([]);
  });

  it('re-ingesting unchanged files skips them and keeps their chunks as they were', async () => {
    const before = await chunkRows('install/guide.md');
    const s = await ingest.ingest({ projectId: P });
    expect(s).toMatchObject({ files: 6, added: 0, updated: 0, unchanged: 6, removed: 0 });
    expect(await chunkRows('install/guide.md')).toEqual(before);
  });

  it('a changed file has its chunks replaced; unchanged positions keep their ids', async () => {
    const before = await chunkRows('install/guide.md');
    file('install/guide.md', '# Installation\n\nInstall with npm.\n\n## Podman\n\nRun the pod.\n');
    const s = await ingest.ingest({ projectId: P });
    expect(s).toMatchObject({ added: 0, updated: 1, unchanged: 5, removed: 0 });
    const after = await chunkRows('install/guide.md');
    expect(after.map((r) => r.content)).toEqual(['# Installation\n\nInstall with npm.', '## Podman\n\nRun the pod.']);
    expect(after[0].id).toBe(before[0].id);
    expect(after[1].id).toBe(before[1].id); // same position, new content: updated in place
    const [{ n }] = await ds.query(`SELECT count(*)::int AS n FROM knowledge_chunks WHERE project_id = $1 AND content LIKE '%container%'`, [P]);
    expect(n).toBe(0);
  });

  it('a file that shrinks loses its extra chunks', async () => {
    file('install/guide.md', '# Installation\n\nInstall with npm.\n');
    expect(await ingest.ingest({ projectId: P })).toMatchObject({ updated: 1 });
    expect((await chunkRows('install/guide.md')).map((r) => r.chunk_index)).toEqual([0]);
  });

  it('files deleted since the last ingest are removed, but only under the ingested path', async () => {
    unlinkSync(join(ws, P, 'roadmap', '2027.md'));
    unlinkSync(join(ws, P, 'api', 'errors.txt'));
    const scoped = await ingest.ingest({ projectId: P, path: 'api' });
    expect(scoped).toMatchObject({ path: 'api', files: 1, unchanged: 1, removed: 1, modules: ['api'] });
    expect(await chunkRows('roadmap/2027.md')).toHaveLength(1); // outside the scope: still there
    const all = await ingest.ingest({ projectId: P });
    expect(all).toMatchObject({ removed: 1, files: 4 });
    expect(await chunkRows('roadmap/2027.md')).toHaveLength(0);
    expect((await knowledge.modules(P)).map((m) => m.name)).toEqual(['api', 'faq', 'general', 'install']);
  });

  it('an explicit module applies to the ingested files and counts as an update', async () => {
    const s = await ingest.ingest({ projectId: P, path: 'api/reference.md', module: 'reference' });
    expect(s).toMatchObject({ path: 'api/reference.md', files: 1, updated: 1, modules: ['reference'] });
    expect((await knowledge.modules(P)).map((m) => m.name)).toEqual(['faq', 'general', 'install', 'reference']);
    // naming an unsupported file explicitly says why it was not indexed
    expect((await ingest.ingest({ projectId: P, path: 'image.png' })).skipped).toEqual([{ path: 'image.png', reason: 'unsupported_type' }]);
  });

  it.each([
    ['../outside', 'leads outside the project folder'],
    ['api/../../outside/leak.md', 'leads outside the project folder'],
    ['/etc', 'is absolute'],
    ['outlink', 'leads outside the project folder'],
    ['outlink/leak.md', 'leads outside the project folder'],
    ['leak.md', 'leads outside the project folder'],
    ['~/docs', 'starts with "~"'],
  ])('refuses %s (400) and indexes nothing', async (path, message) => {
    const before = await ds.query(`SELECT count(*)::int AS n FROM knowledge_chunks`);
    const err = await ingest.ingest({ projectId: P, path }).catch((e) => e);
    expect(err).toBeInstanceOf(KnowledgeException);
    expect(err).toMatchObject({ code: KnowledgeExceptionCode.INVALID_PATH });
    expect(err.httpStatus()).toBe(400);
    expect(err.message).toContain(message);
    expect(await ds.query(`SELECT count(*)::int AS n FROM knowledge_chunks`)).toEqual(before);
    const [{ n }] = await ds.query(`SELECT count(*)::int AS n FROM knowledge_chunks WHERE content LIKE '%outside secret%'`);
    expect(n).toBe(0);
  });

  it('a missing project folder or path is a 404 with a clear message', async () => {
    const noProject = await ingest.ingest({ projectId: 'ghost' }).catch((e) => e);
    expect(noProject).toMatchObject({ code: KnowledgeExceptionCode.PATH_NOT_FOUND });
    expect(noProject.httpStatus()).toBe(404);
    expect(noProject.message).toMatch(/project "ghost" has no folder/);
    const noPath = await ingest.ingest({ projectId: P, path: 'docs/missing' }).catch((e) => e);
    expect(noPath).toMatchObject({ code: KnowledgeExceptionCode.PATH_NOT_FOUND, message: '"docs/missing" does not exist in the folder of project "proj"' });
  });

  it('concurrent ingests of one project are serialized and both succeed', async () => {
    file('notes/a.md', '# A\n\nalpha\n');
    file('notes/b.md', '# B\n\nbeta\n');
    const [x, y] = await Promise.all([ingest.ingest({ projectId: P }), ingest.ingest({ projectId: P })]);
    expect(x.added + y.added).toBe(2);
    expect(y).toMatchObject({ added: 0, updated: 0 });
    expect((await knowledge.modules(P)).find((m) => m.name === 'notes')).toMatchObject({ chunks: 2, docType: 'md' });
  });

  it('a hard link to a file outside the project is skipped as hardlink, its text never indexed', async () => {
    mkdirSync(join(ws, P, 'linked'), { recursive: true });
    linkSync(join(ws, 'outside', 'leak.md'), join(ws, P, 'linked', 'leak.md'));
    file('linked/own.md', '# Own\n\nours\n');
    const s = await ingest.ingest({ projectId: P, path: 'linked' });
    expect(s.skipped).toEqual([{ path: 'linked/leak.md', reason: 'hardlink' }]);
    expect(s.added).toBe(1);
    const leaked = await ds.query(`SELECT count(*)::int AS n FROM knowledge_chunks WHERE project_id = $1 AND content LIKE '%outside secret%'`, [P]);
    expect(leaked[0].n).toBe(0);
  });
});
