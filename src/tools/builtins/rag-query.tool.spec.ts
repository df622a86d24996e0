import type { KnowledgeRetriever, RetrievalHooks, RetrievalResult } from '../../knowledge/knowledge-retriever.port';
import { JsonSchemaValidator } from '../json-schema.validator';
import type { ToolExecutionContext, ToolProgress } from '../tool-definition';
import { RagQueryTool, type RagQueryOutput } from './rag-query.tool';

const found: RetrievalResult = {
  query: 'how do I install',
  sources: [
    {
      type: 'rag',
      id: '11111111-1111-4111-8111-111111111111',
      title: 'Installation',
      path: 'install/guide.md',
      module: 'install',
      snippet: 'To install Orion run npm install',
      content: '# Installation\n\nTo install Orion run npm install.',
      score: 0.91,
      confidence: 'high',
    },
    {
      type: 'rag',
      id: '22222222-2222-4222-8222-222222222222',
      title: 'Roadmap › Q3',
      path: 'roadmap/2027.md',
      module: 'roadmap',
      snippet: 'a one-line installer',
      content: '## Q3\n\nShip a one-line installer.',
      score: 0.42,
      confidence: 'low',
    },
  ],
  confidence: 'high',
  metrics: { method: 'fts', candidates: 7, returned: 2, latencyMs: 3, topScore: 0.91 },
};

/** A retriever that records its calls and reports candidates like KnowledgeService does. */
function retriever(result: RetrievalResult, reportCandidates = true) {
  const calls: Array<{ projectId: string; query: string; topK: number; signal?: AbortSignal }> = [];
  const r: KnowledgeRetriever = {
    modules: async () => [],
    retrieve: async (projectId, query, topK, signal, hooks?: RetrievalHooks) => {
      calls.push({ projectId, query, topK, signal });
      if (reportCandidates) hooks?.onCandidates?.(result.metrics.candidates);
      return result;
    },
  };
  return { r, calls };
}

function ctx(progress: ToolProgress[]): ToolExecutionContext {
  return { projectId: 'proj', requestId: 'req-1', signal: new AbortController().signal, progress: (p) => progress.push(p) };
}

describe('rag_query', () => {
  it('declares exactly { query: string, topK?: integer = 5 } with topK 1..20', () => {
    const tool = new RagQueryTool(retriever(found).r);
    expect(tool.name).toBe('rag_query');
    expect(tool.origin).toBe('builtin');
    expect(tool.isAvailable()).toBe(true);
    const p = tool.parameters as { properties: Record<string, Record<string, unknown>>; required: string[]; additionalProperties: boolean };
    expect(Object.keys(p.properties)).toEqual(['query', 'topK']);
    expect(p.required).toEqual(['query']);
    expect(p.additionalProperties).toBe(false);
    expect(p.properties.query.type).toBe('string');
    expect(p.properties.topK).toMatchObject({ type: 'integer', default: 5, minimum: 1, maximum: 20 });
  });

  it('the schema accepts good arguments, applies the default and refuses bad ones', () => {
    const tool = new RagQueryTool(retriever(found).r);
    const v = new JsonSchemaValidator();
    expect(v.validate(tool.parameters, { query: 'install' }, 'rag')).toEqual({ ok: true, value: { query: 'install', topK: 5 } });
    for (const bad of [{}, { query: '' }, { query: 'x', topK: 0 }, { query: 'x', topK: 21 }, { query: 'x', topK: 2.5 }, { query: 'x', topK: '5' }, { query: 'x', extra: 1 }]) {
      expect(v.validate(tool.parameters, bad as Record<string, unknown>, 'rag')).toMatchObject({ ok: false, reason: 'invalid' });
    }
  });

  it('reports searching, then ranking with the candidate count, and returns results, confidence and metrics', async () => {
    const { r, calls } = retriever(found);
    const progress: ToolProgress[] = [];
    const c = ctx(progress);
    const res = await new RagQueryTool(r).execute({ query: 'how do I install', topK: 3 }, c);
    expect(progress).toEqual([
      { stage: 'searching', message: 'Searching the knowledge base…' },
      { stage: 'ranking', message: 'Ranking results…', metadata: { candidates: 7 } },
    ]);
    expect(calls).toEqual([{ projectId: 'proj', query: 'how do I install', topK: 3, signal: c.signal }]);
    const out = res.output as RagQueryOutput;
    expect(out).toEqual({
      query: 'how do I install',
      results: [
        { title: 'Installation', path: 'install/guide.md', module: 'install', snippet: 'To install Orion run npm install', content: '# Installation\n\nTo install Orion run npm install.', score: 0.91 },
        { title: 'Roadmap › Q3', path: 'roadmap/2027.md', module: 'roadmap', snippet: 'a one-line installer', content: '## Q3\n\nShip a one-line installer.', score: 0.42 },
      ],
      confidence: 'high',
      metrics: found.metrics,
    });
    expect(res.isError).toBeUndefined();
    expect(JSON.parse(JSON.stringify(out))).toEqual(out);
  });

  it('cites every result as a rag source with title, path, snippet, score and confidence', async () => {
    const res = await new RagQueryTool(retriever(found).r).execute({ query: 'install', topK: 5 }, ctx([]));
    expect(res.sources).toEqual([
      expect.objectContaining({ type: 'rag', title: 'Installation', path: 'install/guide.md', snippet: 'To install Orion run npm install', score: 0.91, confidence: 'high' }),
      expect.objectContaining({ type: 'rag', title: 'Roadmap › Q3', path: 'roadmap/2027.md', score: 0.42, confidence: 'low' }),
    ]);
  });

  it('an empty knowledge base is no error: no results, confidence none, no sources', async () => {
    const empty: RetrievalResult = { query: 'anything', sources: [], confidence: 'none', metrics: { method: 'fts', candidates: 0, returned: 0, latencyMs: 1, topScore: 0 } };
    const progress: ToolProgress[] = [];
    const res = await new RagQueryTool(retriever(empty).r).execute({ query: 'anything', topK: 5 }, ctx(progress));
    expect(res.output).toMatchObject({ results: [], confidence: 'none' });
    expect(res.sources).toEqual([]);
    expect(progress.map((p) => p.stage)).toEqual(['searching', 'ranking']);
  });

  it('still reports ranking once when the retriever does not call onCandidates', async () => {
    const progress: ToolProgress[] = [];
    await new RagQueryTool(retriever(found, false).r).execute({ query: 'install', topK: 5 }, ctx(progress));
    expect(progress).toEqual([
      { stage: 'searching', message: 'Searching the knowledge base…' },
      { stage: 'ranking', message: 'Ranking results…', metadata: { candidates: 7 } },
    ]);
  });

  it('works without a progress sink, and lets retrieval errors through for the runner to classify', async () => {
    const failing: KnowledgeRetriever = { modules: async () => [], retrieve: async () => Promise.reject(new Error('db down')) };
    const c: ToolExecutionContext = { projectId: 'p', requestId: 'r', signal: new AbortController().signal };
    await expect(new RagQueryTool(retriever(found).r).execute({ query: 'x' }, c)).resolves.toBeDefined();
    await expect(new RagQueryTool(failing).execute({ query: 'x' }, c)).rejects.toThrow('db down');
  });
});
