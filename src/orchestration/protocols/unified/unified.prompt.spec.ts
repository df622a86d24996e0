import type { RetrievalResult } from '../../../knowledge/knowledge-retriever.port';
import type { LlmToolSpec } from '../../../llm/llm-adapter.port';
import { UNIFIED_SYSTEM_PROMPT } from '../prompts';
import { buildAgentSystemPrompt, buildDirectSystemPrompt } from './unified.prompt';

const spec = (name: string, description = `${name} does things`): LlmToolSpec => ({ name, description, parameters: { type: 'object' } });

describe('unified system prompts', () => {
  it('guides each tool (built-ins by hint, MCP tools by their description)', () => {
    const p = buildAgentSystemPrompt({ tools: [spec('read_file'), spec('github__search_issues', 'Search GitHub issues\n  by text')], modules: [], maxTokens: 1000 });
    expect(p.startsWith(UNIFIED_SYSTEM_PROMPT)).toBe(true);
    expect(p).toContain('Tools available in this turn: read_file, github__search_issues.');
    expect(p).toContain("- read_file: reads one text file of the user's project folder");
    expect(p).toContain('- github__search_issues: Search GitHub issues by text');
    expect(p).toContain('is_error');
    expect(p).not.toContain('Knowledge base modules'); // no rag_query, no module list
  });

  it('lists modules only with rag_query and cuts the list, never the guidance or the instructions', () => {
    const modules = Array.from({ length: 30 }, (_, i) => ({ name: `m${i}`, displayName: `Module ${i}`, docType: 'doc', chunks: 1 }));
    const roomy = buildAgentSystemPrompt({ tools: [spec('rag_query')], modules, customInstructions: 'Be kind.', maxTokens: 10_000 });
    expect(roomy).toContain('- m29 — Module 29 (doc)');
    const fixed = buildAgentSystemPrompt({ tools: [spec('rag_query')], modules: [], customInstructions: 'Be kind.', maxTokens: 10_000 }).length;
    const maxTokens = Math.floor((fixed + 200) / 4); // room for the header and a few lines
    const tight = buildAgentSystemPrompt({ tools: [spec('rag_query')], modules, customInstructions: 'Be kind.', maxTokens });
    expect(tight).toContain('- m0 — Module 0 (doc)');
    expect(tight).not.toContain('- m29');
    expect(tight).toMatch(/- … and \d+ more modules/);
    expect(tight.length).toBeLessThanOrEqual(maxTokens * 4);
    expect(tight.endsWith('Be kind.')).toBe(true);
    const none = buildAgentSystemPrompt({ tools: [spec('rag_query')], modules, customInstructions: 'x'.repeat(2000), maxTokens: 100 });
    expect(none).not.toContain('- m0');
    expect(none).toContain('x'.repeat(2000));
  });

  it('numbers the retrieved excerpts with their paths, best first, within the system share', () => {
    const retrieval: RetrievalResult = {
      query: 'q',
      confidence: 'high',
      metrics: { method: 'fts', candidates: 3, returned: 3, latencyMs: 1, topScore: 1 },
      sources: [1, 2, 3].map((i) => ({ type: 'rag' as const, id: `${i}`, title: `T${i}`, path: `docs/${i}.md`, module: 'docs', snippet: `s${i}`, content: `${i}`.repeat(900), score: 1 / i, confidence: 'high' as const })),
    };
    const all = buildDirectSystemPrompt({ retrieval, customInstructions: 'Cite.', maxTokens: 5000 });
    expect(all).toContain('[1] docs/1.md (module docs) — T1');
    expect(all).toContain('[3] docs/3.md');
    expect(all.endsWith('Cite.')).toBe(true);
    const tight = buildDirectSystemPrompt({ retrieval, maxTokens: 400 });
    expect(tight).toContain('[1] docs/1.md');
    expect(tight).not.toContain('[3] docs/3.md');
    expect(tight.length).toBeLessThanOrEqual(1600);
    expect(buildDirectSystemPrompt({ maxTokens: 400 })).toBe(UNIFIED_SYSTEM_PROMPT);
  });
});
