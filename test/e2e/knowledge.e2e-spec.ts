import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { AppModule } from '../../src/app.module';
import { configureApp } from '../../src/bootstrap';
import { KNOWLEDGE_RETRIEVER, type KnowledgeRetriever } from '../../src/knowledge/knowledge-retriever.port';
import { KnowledgeModule } from '../../src/knowledge/knowledge.module';
import { RagQueryTool } from '../../src/tools/builtins/rag-query.tool';
import type { ToolProgress } from '../../src/tools/tool-definition';
import { ToolRegistryService } from '../../src/tools/tool-registry.service';
import { ToolRunnerService } from '../../src/tools/tool-runner.service';
import { createTestDatabase } from '../support/db';

/**
 * The knowledge routes over real HTTP, on the whole app. KnowledgeModule is imported next to
 * AppModule so this runs before and after the module is wired into AppModule (Nest keeps one
 * instance of a module imported twice); otherwise this is test/support/app.ts's startApp.
 */
describe('knowledge base over HTTP', () => {
  let app: INestApplication;
  let url: string;
  let ws: string;
  let drop: () => Promise<void>;

  const post = async (body: unknown) => {
    const res = await fetch(`${url}/api/knowledge/ingest`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    return { status: res.status, body: await res.json() };
  };
  const get = async (path: string) => {
    const res = await fetch(`${url}${path}`);
    return { status: res.status, body: await res.json() };
  };
  const write = (rel: string, text: string) => {
    mkdirSync(join(ws, rel, '..'), { recursive: true });
    writeFileSync(join(ws, rel), text);
  };

  beforeAll(async () => {
    ws = realpathSync(mkdtempSync(join(tmpdir(), 'orion-ws-')));
    const db = await createTestDatabase();
    drop = db.drop;
    const moduleRef = await Test.createTestingModule({
      imports: [
        AppModule.forRoot({ DATABASE_URL: db.url, WORKSPACE_ROOT: ws, LLM_PROVIDER: 'replay', MCP_CONFIG: '', LOG_LEVEL: 'error' }),
        KnowledgeModule,
      ],
    }).compile();
    app = moduleRef.createNestApplication({ bodyParser: false, logger: ['error'] });
    configureApp(app);
    await app.listen(0, '127.0.0.1');
    url = `http://127.0.0.1:${(app.getHttpServer().address() as { port: number }).port}`;

    write('default/README.md', '# Acme\n\nAcme builds rockets.\n');
    write('default/install/guide.md', '# Installation\n\nTo install Acme, run the installer.\n\n## Linux\n\nUse the apt repository to install it.\n');
    write('default/roadmap/2027.md', '# Roadmap\n\n## Q1\n\nReusable boosters.\n');
    write('default/api-reference/auth.txt', 'Authentication uses bearer tokens.\n');
    write('secret/keys.md', '# Keys\n\ntop secret launch codes\n');
    mkdirSync(join(ws, 'other'));
    symlinkSync(join(ws, 'secret'), join(ws, 'default', 'escape'));
  });

  afterAll(async () => {
    await app?.close();
    await drop?.();
    rmSync(ws, { recursive: true, force: true });
  });

  it('ingests the default project and lists its modules', async () => {
    const res = await post({});
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      projectId: 'default',
      path: '.',
      files: 4,
      added: 4,
      updated: 0,
      unchanged: 0,
      removed: 0,
      skipped: [{ path: 'escape', reason: 'symlink' }],
      modules: ['api-reference', 'general', 'install', 'roadmap'],
    });
    expect(res.body.chunks).toBeGreaterThanOrEqual(5);

    const modules = await get('/api/knowledge/modules?projectId=default');
    expect(modules.status).toBe(200);
    expect(modules.body).toEqual([
      { name: 'api-reference', displayName: 'API Reference', docType: 'txt', chunks: 1 },
      { name: 'general', displayName: 'General', docType: 'md', chunks: 1 },
      { name: 'install', displayName: 'Install', docType: 'md', chunks: 2 },
      { name: 'roadmap', displayName: 'Roadmap', docType: 'md', chunks: 1 },
    ]);
    expect((await get('/api/knowledge/modules')).body).toEqual(modules.body); // projectId defaults to "default"
    expect((await get('/api/knowledge/modules?projectId=other')).body).toEqual([]);
  });

  it('re-ingesting is idempotent', async () => {
    expect((await post({ projectId: 'default' })).body).toMatchObject({ files: 4, added: 0, updated: 0, unchanged: 4 });
  });

  it('the modules list follows an ingest at once (it is kept in memory between ingests)', async () => {
    const before = (await get('/api/knowledge/modules?projectId=other')).body;
    expect(before).toEqual([]);
    write('other/billing/questions.md', '# Billing\n\nAsk away.\n');
    expect((await post({ projectId: 'other' })).body).toMatchObject({ added: 1 });
    expect((await get('/api/knowledge/modules?projectId=other')).body).toEqual([{ name: 'billing', displayName: 'Billing', docType: 'md', chunks: 1 }]);
    rmSync(join(ws, 'other', 'billing'), { recursive: true });
    expect((await post({ projectId: 'other' })).body).toMatchObject({ removed: 1 });
    expect((await get('/api/knowledge/modules?projectId=other')).body).toEqual([]);
  });

  it('searches what was ingested', async () => {
    const res = await get('/api/knowledge/search?q=how%20do%20I%20install&topK=2');
    expect(res.status).toBe(200);
    expect(res.body.sources).toHaveLength(2);
    expect(res.body.sources[0]).toMatchObject({ type: 'rag', path: 'install/guide.md', module: 'install', confidence: 'high' });
    expect(res.body).toMatchObject({ query: 'how do I install', confidence: 'high', metrics: { method: 'fts', returned: 2 } });
    const none = await get('/api/knowledge/search?q=submarines');
    expect(none.body).toMatchObject({ sources: [], confidence: 'none' });
  });

  it.each([
    ['../secret', 'leads outside the project folder'],
    ['escape', 'leads outside the project folder'],
    ['escape/keys.md', 'leads outside the project folder'],
    ['install/../../secret/keys.md', 'leads outside the project folder'],
    ['/etc', 'is absolute'],
    ['C:\\Windows', 'is absolute'],
  ])('path %s is a 400 and indexes nothing', async (path, message) => {
    const res = await post({ projectId: 'default', path });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ statusCode: 400, error: 'knowledge_invalid_path' });
    expect(res.body.message).toContain(message);
    const leaked = await get('/api/knowledge/search?q=launch%20codes');
    expect(leaked.body.sources).toEqual([]);
  });

  it.each([
    [{ projectId: '../etc' }, 'projectId must be'],
    [{ projectId: 'a/b' }, 'projectId must be'],
    [{ projectId: 7 }, 'projectId must be a string'],
    [{ path: '' }, 'path must not be empty'],
    [{ path: 42 }, 'path must be a string'],
    [{ module: '../x' }, 'module must be'],
    [{ unknown: true }, 'unknown is not allowed (unknown field; accepted: projectId, module, path)'],
  ])('body %j is a 400', async (body, message) => {
    const res = await post(body);
    expect(res.status).toBe(400);
    expect(JSON.stringify(res.body.message)).toContain(message);
  });

  it('bad query parameters are 400s', async () => {
    expect((await get('/api/knowledge/modules?projectId=..%2Fx')).status).toBe(400);
    expect((await get('/api/knowledge/search')).status).toBe(400);
    expect((await get('/api/knowledge/search?q=x&topK=0')).status).toBe(400);
    expect((await get('/api/knowledge/search?q=x&topK=21')).status).toBe(400);
    expect((await get('/api/knowledge/search?q=x&topK=abc')).status).toBe(400);
  });

  it('a missing project folder or path is a 404 with a clear message', async () => {
    const noProject = await post({ projectId: 'ghost' });
    expect(noProject.status).toBe(404);
    expect(noProject.body).toMatchObject({ error: 'knowledge_path_not_found' });
    expect(noProject.body.message).toContain('project "ghost" has no folder');
    const noPath = await post({ projectId: 'default', path: 'docs/missing' });
    expect(noPath.status).toBe(404);
    expect(noPath.body.message).toBe('"docs/missing" does not exist in the folder of project "default"');
  });

  it('an explicit module and a sub-path: only that path changes', async () => {
    const res = await post({ projectId: 'default', path: 'roadmap', module: 'plans' });
    expect(res.body).toMatchObject({ path: 'roadmap', files: 1, updated: 1, modules: ['plans'] });
    const names = (await get('/api/knowledge/modules')).body.map((m: { name: string }) => m.name);
    expect(names).toEqual(['api-reference', 'general', 'install', 'plans']);
  });

  it('rag_query runs through the tool runner: validated, defaults applied, sources returned', async () => {
    const registry = app.get(ToolRegistryService);
    // until the tool is wired into ToolsModule, register it here the way the module will
    if (!registry.get('rag_query')) registry.register(new RagQueryTool(app.get<KnowledgeRetriever>(KNOWLEDGE_RETRIEVER)));
    const tools = (await get('/api/tools')).body as Array<{ name: string; available: boolean; parameters: { required: string[] } }>;
    expect(tools.find((t) => t.name === 'rag_query')).toMatchObject({ available: true, parameters: { required: ['query'] } });

    const progress: ToolProgress[] = [];
    const ctx = { projectId: 'default', requestId: 'e2e-rag', signal: new AbortController().signal, progress: (p: ToolProgress) => progress.push(p) };
    const run = await app.get(ToolRunnerService).run({ name: 'rag_query', arguments: '{"query":"how do I install"}' }, ctx);
    expect(run).toMatchObject({ outcome: 'success', isError: false, args: { query: 'how do I install', topK: 5 } });
    expect(run.output).toMatchObject({ confidence: 'high', results: [{ path: 'install/guide.md' }, expect.anything()] });
    expect(run.sources[0]).toMatchObject({ type: 'rag', path: 'install/guide.md', confidence: 'high' });
    expect(progress.map((p) => p.stage)).toEqual(['searching', 'ranking']);

    const bad = await app.get(ToolRunnerService).run({ name: 'rag_query', arguments: { query: 'x', topK: 50 } }, ctx);
    expect(bad.outcome).toBe('validation_error');
  });

  it("the README's example: a file holding only a heading is indexed and found", async () => {
    write('readme-example/docs/roadmap.md', '# Roadmap\n');
    const res = await post({ projectId: 'readme-example' });
    expect(res.body).toMatchObject({ files: 1, added: 1, chunks: 1 });
    const found = await get('/api/knowledge/search?projectId=readme-example&q=what%20is%20on%20the%20roadmap');
    expect(found.body.sources).toEqual([expect.objectContaining({ type: 'rag', path: 'docs/roadmap.md', snippet: expect.stringContaining('Roadmap') })]);
  });

  it('the routes are in the OpenAPI document', async () => {
    const doc = (await get('/docs-json')).body;
    expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining(['/api/knowledge/ingest', '/api/knowledge/modules', '/api/knowledge/search']));
  });
});
