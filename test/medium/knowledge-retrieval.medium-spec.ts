import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { INestApplicationContext } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { AppConfigModule } from '../../src/config/config.module';
import { DatabaseModule } from '../../src/database/database.module';
import { KNOWLEDGE_EMBEDDING_PROVIDER, type EmbeddingProvider } from '../../src/knowledge/embedding/embedding-provider.port';
import { KnowledgeIngestService } from '../../src/knowledge/knowledge-ingest.service';
import { KnowledgeModule } from '../../src/knowledge/knowledge.module';
import { KnowledgeRepository } from '../../src/knowledge/repositories/knowledge.repository';
import { KnowledgeService } from '../../src/knowledge/knowledge.service';
import { RagQueryTool } from '../../src/tools/builtins/rag-query.tool';
import type { ToolProgress } from '../../src/tools/tool-definition';
import { createTestDatabase } from '../support/db';

/** A small documentation set of the kind a project keeps: overview, installation, roadmap, API, FAQ, changelog. */
const CORPUS: Record<string, string> = {
  'README.md': `# Orion

Orion is a service that runs LLM tool-calling turns for chat products and keeps them under control.
It streams answers over Server-Sent Events and records a trace of every step.

## Features

- Two-stage and unified orchestration protocols
- Built-in tools for files, the web and the knowledge base
- MCP servers as tool providers
`,
  'install/guide.md': `# Installation

This guide explains how to install Orion on a workstation or a server.

## Requirements

You need Node.js 20.19 or newer and npm. PostgreSQL is optional: without it Orion keeps its data in an embedded database.

## Install with npm

Clone the repository, then install the dependencies and build:

\`\`\`sh
npm install
npm run build
\`\`\`

Start the service with \`npm start\`. It listens on port 3000 unless PORT is set.

## Install with Docker

Build the image with \`docker build -t orion .\` and run it with \`docker run -p 3000:3000 orion\`.
Mount a volume on /app/data to keep the embedded database between restarts.

## Troubleshooting the installation

If the install fails with EACCES, do not use sudo: fix the permissions of your npm prefix instead.
`,
  'roadmap/2027.md': `# Roadmap 2027

What we plan to ship next year, quarter by quarter.

## Q1: Observability

Export traces to OpenTelemetry and add latency dashboards.

## Q2: Plugins

A plugin system so teams can add their own orchestration protocols.

## Q3: Packaging

A one-line installer script and signed release binaries for Linux and macOS.

## Q4: Multi-tenancy

Per-tenant quotas, rate limits and billing reports.
`,
  'api/reference.md': `# API reference

## Authentication

Every request to /api needs a bearer token in the Authorization header when API_KEYS is set.
Requests without a valid token are answered with 401 Unauthorized.

## Sending a message

POST /api/chat/messages streams the answer as Server-Sent Events. The body holds the projectId and the content.

## Rate limits

Each API key may send 60 requests per minute. Beyond that the service answers 429 Too Many Requests with a Retry-After header.
`,
  'faq/faq.rst': `Frequently asked questions
==========================

Is Orion free?
--------------

Yes. Orion is open source under the MIT license.

Which models does it support?
-----------------------------

Any model behind an OpenAI-compatible Chat Completions endpoint, and Ollama.
`,
  'changelog.txt': `0.1.0 first public release: chat streaming, two-stage protocol, file tools.
0.2.0 knowledge base with full-text search, rag_query tool, MCP support.
`,
};

/**
 * A fake embedding model for the fusion path: each text becomes counts of a few concepts, so
 * paraphrases with no shared word ("get the software onto my computer") land near the
 * installation guide. Deterministic, no model needed.
 */
const CONCEPTS: string[][] = [
  ['install', 'installation', 'installer', 'setup', 'software', 'computer', 'machine', 'npm', 'docker'],
  ['roadmap', 'plan', 'ship', 'quarter', 'future', 'next', 'upcoming'],
  ['api', 'token', 'request', 'header', 'authorization', 'credentials', 'login'],
  ['free', 'license', 'price', 'cost', 'pay'],
];
class ConceptEmbeddings implements EmbeddingProvider {
  readonly model = 'fake-concepts-v1';
  calls = 0;
  fail = false;
  async embed(texts: readonly string[]): Promise<number[][]> {
    this.calls++;
    if (this.fail) throw new Error('embedding endpoint down');
    return texts.map((t) => {
      const words = t.toLowerCase().split(/[^a-z]+/);
      return [...CONCEPTS.map((c) => words.filter((w) => c.includes(w)).length), 0.1];
    });
  }
}

async function boot(ws: string, embeddings: EmbeddingProvider | null) {
  const db = await createTestDatabase();
  const moduleRef = await Test.createTestingModule({
    imports: [AppConfigModule.forRoot({ DATABASE_URL: db.url, WORKSPACE_ROOT: ws, LLM_PROVIDER: 'replay', LOG_LEVEL: 'error' }), DatabaseModule, KnowledgeModule],
  })
    .overrideProvider(KNOWLEDGE_EMBEDDING_PROVIDER)
    .useValue(embeddings)
    .compile();
  const ctx = await moduleRef.init();
  return { ctx, drop: db.drop };
}

function writeCorpus(root: string): void {
  for (const [rel, text] of Object.entries(CORPUS)) {
    mkdirSync(join(root, rel, '..'), { recursive: true });
    writeFileSync(join(root, rel), text);
  }
}

describe('knowledge retrieval, full-text (medium)', () => {
  let ws: string;
  let ctx: INestApplicationContext;
  let drop: () => Promise<void>;
  let knowledge: KnowledgeService;

  beforeAll(async () => {
    ws = realpathSync(mkdtempSync(join(tmpdir(), 'orion-kb-')));
    writeCorpus(join(ws, 'docs'));
    mkdirSync(join(ws, 'other'));
    writeFileSync(join(ws, 'other', 'install.md'), '# Install other\n\nHow to install the other project.\n');
    ({ ctx, drop } = await boot(ws, null));
    knowledge = ctx.get(KnowledgeService);
    await ctx.get(KnowledgeIngestService).ingest({ projectId: 'docs' });
    await ctx.get(KnowledgeIngestService).ingest({ projectId: 'other' });
  });
  afterAll(async () => {
    await ctx?.close();
    await drop?.();
    rmSync(ws, { recursive: true, force: true });
  });

  it('"how do I install" ranks the installation guide first, with high confidence', async () => {
    const r = await knowledge.retrieve('docs', 'how do I install', 5);
    expect(r.sources[0]).toMatchObject({ path: 'install/guide.md', module: 'install', confidence: 'high' });
    expect(r.sources[0].title).toMatch(/^Installation/);
    expect(r.sources.slice(0, 3).every((s) => s.path === 'install/guide.md')).toBe(true);
    expect(r.confidence).toBe('high');
    expect(r.metrics).toMatchObject({ method: 'fts', returned: r.sources.length, topScore: r.sources[0].score });
    expect(r.metrics.candidates).toBeGreaterThanOrEqual(r.sources.length);
    expect(r.sources.every((s) => s.score > 0 && s.score <= 1)).toBe(true);
    expect([...r.sources].sort((a, b) => b.score - a.score)).toEqual(r.sources);
    // other projects are invisible
    expect(r.sources.some((s) => s.content.includes('other project'))).toBe(false);
  });

  it.each([
    ['What is planned for next year?', 'roadmap/2027.md', /Roadmap 2027/],
    ['which quarter brings plugins', 'roadmap/2027.md', /Q2: Plugins/],
    ['how do I authenticate with a bearer token', 'api/reference.md', /Authentication/],
    ['too many requests rate limit', 'api/reference.md', /Rate limits/],
    ['Is it free? What license?', 'faq/faq.rst', /Is Orion free\?/],
    ['installing with docker', 'install/guide.md', /Install with Docker/],
    ['what changed in 0.2.0', 'changelog.txt', /changelog\.txt/],
  ])('%s → %s', async (question, path, title) => {
    const r = await knowledge.retrieve('docs', question, 5);
    expect(r.sources[0]).toMatchObject({ path });
    expect(r.sources[0].title).toMatch(title);
    expect(r.confidence).not.toBe('none');
  });

  it.each([
    ['how do I install', 'high'], // every term, in the title
    ['too many requests rate limit', 'high'],
    ['Retry-After header', 'high'], // every term, in the text
    ['which quarter brings plugins', 'low'], // a third of the terms ("quarter", "bring" are elsewhere or nowhere)
    ['install kubernetes helm chart', 'low'], // the corpus says nothing about Kubernetes
  ])('confidence of "%s" is %s', async (question, level) => {
    expect((await knowledge.retrieve('docs', question, 5)).confidence).toBe(level);
  });

  it('a passing mention of a single term is medium, a prominent one high', async () => {
    const r = await knowledge.retrieve('docs', 'docker', 10);
    expect(r.sources[0]).toMatchObject({ title: 'Installation › Install with Docker', confidence: 'high' });
    const orion = await knowledge.retrieve('docs', 'orion', 10);
    expect(orion.sources.find((s) => s.title === 'Installation › Install with Docker')?.confidence).toBe('medium');
  });

  it('a snippet shows the passage around the matched words', async () => {
    const r = await knowledge.retrieve('docs', 'Retry-After header', 3);
    expect(r.sources[0].snippet).toMatch(/Retry-After/);
    expect(r.sources[0].snippet.length).toBeLessThanOrEqual(320);
    expect(r.sources[0].content).toContain('60 requests per minute');
  });

  it('a question the corpus cannot answer has no results and confidence none', async () => {
    for (const q of ['quantum entanglement of photons', 'the and of', '???', '   ']) {
      const r = await knowledge.retrieve('docs', q, 5);
      expect(r).toMatchObject({ sources: [], confidence: 'none', metrics: { method: 'fts', candidates: 0, returned: 0, topScore: 0 } });
    }
  });

  it('partial matches are found (OR semantics) but with lower confidence than full ones', async () => {
    const r = await knowledge.retrieve('docs', 'install kubernetes helm chart', 5);
    expect(r.sources[0].path).toBe('install/guide.md');
    expect(r.sources[0].confidence).not.toBe('high');
  });

  it('topK bounds the results; an empty project answers none', async () => {
    expect((await knowledge.retrieve('docs', 'orion', 2)).sources).toHaveLength(2);
    expect((await knowledge.retrieve('docs', 'orion', 100)).sources.length).toBeLessThanOrEqual(20);
    expect(await knowledge.retrieve('empty', 'install', 5)).toMatchObject({ sources: [], confidence: 'none' });
  });

  it('rag_query over the real retriever: progress, results and sources', async () => {
    const tool = new RagQueryTool(knowledge);
    const progress: ToolProgress[] = [];
    const res = await tool.execute({ query: 'how do I install', topK: 3 }, { projectId: 'docs', requestId: 'r', signal: new AbortController().signal, progress: (p) => progress.push(p) });
    const out = res.output as { results: Array<{ path: string }>; confidence: string; metrics: { candidates: number } };
    expect(progress).toEqual([
      { stage: 'searching', message: 'Searching the knowledge base…' },
      { stage: 'ranking', message: 'Ranking results…', metadata: { candidates: out.metrics.candidates } },
    ]);
    expect(out.results[0].path).toBe('install/guide.md');
    expect(out.confidence).toBe('high');
    expect(res.sources![0]).toMatchObject({ type: 'rag', path: 'install/guide.md', confidence: 'high' });
  });

  it('a cancelled retrieval rejects', async () => {
    const ac = new AbortController();
    ac.abort();
    await expect(knowledge.retrieve('docs', 'install', 5, ac.signal)).rejects.toThrow();
  });
});

describe('knowledge retrieval fused with vectors (medium)', () => {
  let ws: string;
  let ctx: INestApplicationContext;
  let drop: () => Promise<void>;
  let knowledge: KnowledgeService;
  let vector: boolean;
  const embeddings = new ConceptEmbeddings();

  beforeAll(async () => {
    ws = realpathSync(mkdtempSync(join(tmpdir(), 'orion-kb-')));
    writeCorpus(join(ws, 'docs'));
    ({ ctx, drop } = await boot(ws, embeddings));
    knowledge = ctx.get(KnowledgeService);
    // detect, don't assume: PGlite has pgvector; a PostgreSQL server may not
    vector = await ctx.get(KnowledgeRepository).hasVectorColumn();
  });
  afterAll(async () => {
    await ctx?.close();
    await drop?.();
    rmSync(ws, { recursive: true, force: true });
  });

  it('ingest embeds every chunk when the database has the vector column (and none otherwise)', async () => {
    const s = await ctx.get(KnowledgeIngestService).ingest({ projectId: 'docs' });
    expect(s.embedded).toBe(vector ? s.chunks : 0);
    expect(s.warnings).toEqual([]);
  });

  it('a paraphrase sharing no word with the guide finds it through the vector ranking', async () => {
    const q = 'get the software onto my computer';
    const r = await knowledge.retrieve('docs', q, 3);
    if (!vector) {
      // no pgvector on this server: full-text only, and the paraphrase finds nothing useful
      expect(r.metrics.method).toBe('fts');
      return;
    }
    expect(r.metrics.method).toBe('fts+vector');
    expect(r.sources[0].path).toBe('install/guide.md');
    // found by vectors alone: ranked, but never more than low confidence
    expect(r.sources[0].confidence).toBe('low');
    expect(r.confidence).toBe('low');
  });

  it('fusion keeps the lexical winner first and scores it 1 when both rankings agree', async () => {
    const r = await knowledge.retrieve('docs', 'how do I install', 5);
    expect(r.sources[0]).toMatchObject({ path: 'install/guide.md', confidence: 'high' });
    if (!vector) return;
    expect(r.metrics.method).toBe('fts+vector');
    expect(r.sources[0].score).toBeGreaterThan(0.9);
    expect(r.sources.every((s) => s.score > 0 && s.score <= 1)).toBe(true);
  });

  it('an embedding endpoint that fails degrades to full-text search', async () => {
    embeddings.fail = true;
    try {
      const r = await knowledge.retrieve('docs', 'how do I install', 5);
      expect(r.metrics.method).toBe('fts');
      expect(r.sources[0].path).toBe('install/guide.md');
    } finally {
      embeddings.fail = false;
    }
  });

  it('a file embedded while the endpoint failed is re-embedded by the next ingest', async () => {
    if (!vector) return;
    writeFileSync(join(ws, 'docs', 'install', 'extra.md'), '# Extra setup\n\nSetup notes.\n');
    embeddings.fail = true;
    const first = await ctx.get(KnowledgeIngestService).ingest({ projectId: 'docs' });
    expect(first).toMatchObject({ added: 1, embedded: 0 });
    expect(first.warnings[0]).toMatch(/embedding install\/extra\.md failed/);
    embeddings.fail = false;
    const second = await ctx.get(KnowledgeIngestService).ingest({ projectId: 'docs' });
    expect(second).toMatchObject({ updated: 1, embedded: 1, warnings: [] });
  });
});
