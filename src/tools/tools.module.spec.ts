import { Global, Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { DataSource } from 'typeorm';
import { AppConfigService } from '../config/app-config.service';
import { TRACE_SINK, type TraceRecord, type TraceSink } from '../trace/trace-sink.port';
import { ToolRegistryService } from './tool-registry.service';
import { TOOL_RUNNER, type ToolRunner } from './tool-runner.port';
import { ToolRunnerService } from './tool-runner.service';
import { ToolsModule } from './tools.module';
import { KnowledgeModule } from '../knowledge/knowledge.module';
import { KNOWLEDGE_RETRIEVER, type KnowledgeRetriever } from '../knowledge/knowledge-retriever.port';

/** The knowledge base without a database: an empty one. */
const emptyKnowledge: KnowledgeRetriever = {
  modules: async () => [],
  retrieve: async (_p, query) => ({ query, sources: [], confidence: 'none', metrics: { method: 'fts', candidates: 0, returned: 0, latencyMs: 0, topScore: 0 } }),
};
@Module({ providers: [{ provide: KNOWLEDGE_RETRIEVER, useValue: emptyKnowledge }], exports: [KNOWLEDGE_RETRIEVER] })
class EmptyKnowledgeModule {}

const records: TraceRecord[] = [];
const trace: TraceSink = { record: (e) => void records.push(e), flush: async () => undefined };

function configWith(values: Record<string, unknown>) {
  const all: Record<string, unknown> = { WORKSPACE_ROOT: './workspace', TOOL_TIMEOUT_MS: 1000, TOOL_RESULT_MAX_BYTES: 65536, ...values };
  return {
    get: (k: string) => all[k],
    list: (k: string) => (typeof all[k] === 'string' ? (all[k] as string).split(',').map((s) => s.trim()).filter(Boolean) : []),
  };
}

/** Stands in for the global AppConfigModule and TraceModule. */
function globals(values: Record<string, unknown> = {}) {
  @Global()
  @Module({
    // no MCP server is configured here, so the pins never reach the (absent) database
    providers: [{ provide: AppConfigService, useValue: configWith(values) }, { provide: TRACE_SINK, useValue: trace }, { provide: DataSource, useValue: {} }],
    exports: [AppConfigService, TRACE_SINK, DataSource],
  })
  class FakeGlobals {}
  return FakeGlobals;
}

describe('ToolsModule', () => {
  it('registers the built-ins on init and exports the registry and the runner (also as TOOL_RUNNER)', async () => {
    const moduleRef = await Test.createTestingModule({ imports: [globals(), ToolsModule] }).overrideModule(KnowledgeModule).useModule(EmptyKnowledgeModule).compile();
    await moduleRef.init();
    const registry = moduleRef.get(ToolRegistryService);
    expect(registry.all().map((t) => t.name)).toEqual(['fetch_page', 'fetch_pages_batch', 'list_files', 'rag_query', 'read_file', 'web_search']);
    expect(registry.all().every((t) => t.origin === 'builtin')).toBe(true);
    const runner = moduleRef.get<ToolRunner>(TOOL_RUNNER);
    expect(runner).toBe(moduleRef.get(ToolRunnerService));
    // web_search is registered but unavailable without SEARXNG_URL
    expect((await runner.specs()).map((s) => s.name)).toEqual(['fetch_page', 'fetch_pages_batch', 'list_files', 'rag_query', 'read_file']);
    expect(records.filter((r) => r.type === 'tool_registration').map((r) => r.details?.name)).toEqual(expect.arrayContaining(['list_files', 'read_file']));
    await moduleRef.close();
  });

  it('leaves out built-ins denied by TOOLS_DENY', async () => {
    const moduleRef = await Test.createTestingModule({ imports: [globals({ TOOLS_DENY: 'read_file' }), ToolsModule] }).overrideModule(KnowledgeModule).useModule(EmptyKnowledgeModule).compile();
    await moduleRef.init();
    expect(moduleRef.get(ToolRegistryService).all().map((t) => t.name)).toEqual(['fetch_page', 'fetch_pages_batch', 'list_files', 'rag_query', 'web_search']);
    await moduleRef.close();
  });
});
