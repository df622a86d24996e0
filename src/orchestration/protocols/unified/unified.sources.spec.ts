import type { ToolRunResult, ToolSource } from '../../../tools/tool-definition';
import { SourcesCollector } from './unified.sources';

const run = (sources: ToolSource[], output: unknown = {}, outcome: ToolRunResult['outcome'] = 'success'): ToolRunResult => ({
  toolName: 'x', args: {}, outcome, output, outputText: JSON.stringify(output), truncated: false, isError: outcome !== 'success', latencyMs: 1, sources, signature: null,
});

describe('SourcesCollector', () => {
  it('is empty with no confidence (none) for a tool-free turn', () => {
    expect(new SourcesCollector().toEvent()).toEqual({ type: 'sources', data: [], sourceTypes: [], ragCount: 0, webCount: 0, confidence: 'none', metrics: null });
  });

  it('dedupes by url or path, keeping the best score in first-seen order', () => {
    const c = new SourcesCollector();
    c.addToolResult('web_search', run([{ type: 'web', title: 'A', url: 'https://a' }, { type: 'web', title: 'B', url: 'https://b' }]));
    c.addToolResult('fetch_pages_batch', run([{ type: 'web', title: 'A full', url: 'https://a', score: 1 }]));
    const e = c.toEvent();
    expect(e.data.map((s) => (s as ToolSource).title)).toEqual(['A full', 'B']);
    expect(e).toMatchObject({ sourceTypes: ['web'], webCount: 2, ragCount: 0, confidence: 'high' });
  });

  it('takes confidence and metrics from rag: the best confidence, the last metrics, ragCalls when several', () => {
    const c = new SourcesCollector();
    c.addToolResult('rag_query', run([{ type: 'rag', title: 'a', path: 'a.md' }], { confidence: 'low', metrics: { returned: 1 } }));
    c.addToolResult('rag_query', run([{ type: 'rag', title: 'b', path: 'b.md' }], { confidence: 'medium', metrics: { returned: 2 } }));
    c.addToolResult('web_search', run([{ type: 'web', title: 'w', url: 'https://w' }]));
    expect(c.toEvent()).toMatchObject({ sourceTypes: ['rag', 'web'], ragCount: 2, webCount: 1, confidence: 'medium', metrics: { returned: 2, ragCalls: 2 } });
  });

  it('reports no confidence (none) when rag_query ran but failed or found nothing: there are no sources', () => {
    const failed = new SourcesCollector();
    failed.addToolResult('rag_query', run([], { error: 'timeout' }, 'timeout'));
    expect(failed.toEvent()).toMatchObject({ data: [], ragCount: 0, confidence: 'none' });
    const empty = new SourcesCollector();
    empty.addToolResult('rag_query', run([], { confidence: 'high', metrics: { returned: 0 } }));
    expect(empty.toEvent()).toMatchObject({ data: [], confidence: 'none', metrics: { returned: 0 } });
  });

  it('reports low confidence when rag_query returned sources but no confidence', () => {
    const c = new SourcesCollector();
    c.addToolResult('rag_query', run([{ type: 'rag', title: 'a', path: 'a.md' }], { passages: 1 }));
    expect(c.toEvent()).toMatchObject({ ragCount: 1, confidence: 'low' });
  });

  it('takes the direct path retrieval without the chunk text', () => {
    const c = new SourcesCollector();
    c.addRetrieval({
      query: 'q',
      confidence: 'medium',
      metrics: { method: 'fts', candidates: 3, returned: 1, latencyMs: 1, topScore: 0.4 },
      sources: [{ type: 'rag', id: '1', title: 'T', path: 'p.md', module: 'm', snippet: 's', content: 'long text', score: 0.4, confidence: 'medium' }],
    });
    const e = c.toEvent();
    expect(e).toMatchObject({ ragCount: 1, confidence: 'medium', metrics: { method: 'fts', returned: 1 } });
    expect(e.data[0]).toEqual({ type: 'rag', id: '1', title: 'T', path: 'p.md', module: 'm', snippet: 's', score: 0.4, confidence: 'medium' });
  });
});
