import { Test } from '@nestjs/testing';
import { AppConfigService } from '../../../config/app-config.service';
import type { ToolDefinition, ToolOrigin } from '../../../tools/tool-definition';
import { ToolRegistryService } from '../../../tools/tool-registry.service';
import { TRACE_SINK, type TraceSink } from '../../../trace/trace-sink.port';
import { ToolIndexService } from './tool-index.service';

const config = { list: () => [], get: (k: string) => (k === 'TOOL_INDEX_ENABLED' ? true : undefined) } as unknown as AppConfigService;
const sink: TraceSink = { record() {}, flush: async () => {} };

function tool(name: string, description: string, properties: Record<string, unknown> = {}, origin: ToolOrigin = 'builtin'): ToolDefinition {
  return {
    name,
    description,
    parameters: { type: 'object', properties },
    origin,
    isAvailable: () => true,
    execute: async () => ({ output: null }),
  };
}

const names = (svc: ToolIndexService, q: string, k = 10) => svc.search(q, k).map((h) => h.name);

describe('ToolIndexService follows ToolRegistryService', () => {
  let registry: ToolRegistryService;

  beforeEach(() => {
    registry = new ToolRegistryService(config, sink);
  });

  it('indexes the tools registered before it was built', () => {
    registry.register(tool('read_file', 'Reads a text file from the workspace.', { path: { type: 'string' } }));
    registry.register(tool('web_search', 'Searches the web.', { query: { type: 'string' } }));
    const svc = new ToolIndexService(registry);
    expect(svc.isEnabled()).toBe(true);
    expect(svc.size).toBe(2);
    expect(names(svc, 'read the contents of a file')[0]).toBe('read_file');
  });

  it('adds tools registered later', () => {
    const svc = new ToolIndexService(registry);
    expect(svc.size).toBe(0);
    expect(svc.search('weather in Paris', 5)).toEqual([]);
    registry.register(tool('get_weather', 'Current weather for a city.', { city: { type: 'string' } }, 'mcp:weather'));
    expect(svc.search('weather in Paris', 5)).toEqual([{ name: 'get_weather', score: expect.any(Number), origin: 'mcp:weather' }]);
  });

  it('applies a changed definition', () => {
    registry.register(tool('lookup', 'Looks up a word in the dictionary.', {}, 'mcp:dict'));
    const svc = new ToolIndexService(registry);
    expect(names(svc, 'dictionary definition of a word')).toEqual(['lookup']);
    registry.register(tool('lookup', 'Finds the stock price of a company.', {}, 'mcp:dict'));
    expect(svc.size).toBe(1);
    expect(names(svc, 'dictionary definition of a word')).toEqual([]);
    expect(names(svc, 'stock price of ACME')).toEqual(['lookup']);
  });

  it('drops unregistered tools for good', () => {
    registry.register(tool('read_file', 'Reads a text file.'));
    registry.register(tool('list_files', 'Lists the files of a folder.'));
    const svc = new ToolIndexService(registry);
    registry.unregister('read_file');
    expect(svc.has('read_file')).toBe(false);
    expect(names(svc, 'read a text file', 50)).not.toContain('read_file');
    expect(names(svc, 'read a text file', 50)).toContain('list_files');
    registry.register(tool('fetch_page', 'Reads a web page.'));
    expect(names(svc, 'read a text file', 50)).not.toContain('read_file');
  });

  it('ignores tools the allow/deny lists keep out', () => {
    const denying = new ToolRegistryService({ list: (k: string) => (k === 'TOOLS_DENY' ? ['secret_tool'] : []) } as unknown as AppConfigService, sink);
    const svc = new ToolIndexService(denying);
    denying.register(tool('secret_tool', 'Reads secrets.'));
    expect(svc.size).toBe(0);
  });

  it('stops following the registry on shutdown', () => {
    const svc = new ToolIndexService(registry);
    svc.onModuleDestroy();
    expect(svc.isEnabled()).toBe(false);
    registry.register(tool('read_file', 'Reads a text file.'));
    expect(svc.size).toBe(0);
  });

  it('is injectable with the registry from a Nest module', async () => {
    const moduleRef = await Test.createTestingModule({
      providers: [ToolRegistryService, ToolIndexService, { provide: AppConfigService, useValue: config }, { provide: TRACE_SINK, useValue: sink }],
    }).compile();
    const reg = moduleRef.get(ToolRegistryService);
    const svc = moduleRef.get(ToolIndexService);
    reg.register(tool('math__factorial', 'Calculate the factorial of a number.', {}, 'mcp:math'));
    expect(names(svc, 'factorial of 7')).toEqual(['math__factorial']);
    await moduleRef.close();
    expect(svc.isEnabled()).toBe(false);
  });

  it('is disabled by TOOL_INDEX_ENABLED=false', () => {
    const off = { list: () => [], get: (k: string) => (k === 'TOOL_INDEX_ENABLED' ? false : undefined) } as unknown as AppConfigService;
    expect(new ToolIndexService(new ToolRegistryService(config, sink), off).isEnabled()).toBe(false);
  });
});

describe('ToolIndexService with an embedding model', () => {
  /** A toy embedding: each dimension is a concept; words map to the concepts they mean. */
  const CONCEPTS: Record<string, number> = { weather: 0, forecast: 0, rain: 0, umbrella: 0, file: 1, read: 1, document: 1, open: 1 };
  const embedder = {
    model: 'toy',
    calls: 0,
    fail: false,
    async embed(texts: readonly string[]) {
      this.calls++;
      if (this.fail) throw new Error('embedding service down');
      return texts.map((t) => {
        const v = [0, 0, 0.01];
        for (const w of t.toLowerCase().split(/[^a-z]+/)) if (w in CONCEPTS) v[CONCEPTS[w]] += 1;
        return v;
      });
    },
  };

  it('finds a paraphrase BM25 alone misses, keeps scores in 0..1, and falls back to BM25 when embedding fails', async () => {
    const registry = new ToolRegistryService(config, sink);
    registry.register(tool('get_weather', 'Current weather and forecast for a city.', { city: { type: 'string' } }, 'builtin'));
    registry.register(tool('read_file', 'Read a text file.', { path: { type: 'string' } }, 'builtin'));
    const svc = new ToolIndexService(registry, config, embedder);
    await svc.embeddingsSettled();
    // no word in common with get_weather's text: BM25 finds nothing
    expect(svc.search('will I need an umbrella', 2)).toEqual([]);
    const fused = await svc.retrieve('will I need an umbrella', 2);
    expect(fused[0]).toMatchObject({ name: 'get_weather', origin: 'builtin' });
    expect(fused[0].score).toBeGreaterThan(0);
    expect(fused[0].score).toBeLessThanOrEqual(1);
    // a threshold above the fused score leaves no candidate
    expect(await svc.retrieve('will I need an umbrella', 2, fused[0].score + 0.01)).toEqual([]);
    // a changed description is embedded again; a removed tool is gone from both signals
    registry.unregister('get_weather');
    expect((await svc.retrieve('will I need an umbrella', 2)).map((h) => h.name)).not.toContain('get_weather');
    embedder.fail = true;
    expect((await svc.retrieve('read a file', 1)).map((h) => h.name)).toEqual(['read_file']);
    embedder.fail = false;
  });

  it('keeps one place per task of a request with several tasks, as search does', async () => {
    const registry = new ToolRegistryService(config, sink);
    for (const kind of ['forecast', 'alerts', 'radar', 'history', 'map']) {
      registry.register(tool(`weather_${kind}`, `Weather ${kind} for a city: weather ${kind} by city.`, { city: { type: 'string' } }));
    }
    registry.register(tool('read_file', 'Read a text file.', { path: { type: 'string' } }));
    const svc = new ToolIndexService(registry, config, embedder);
    await svc.embeddingsSettled();
    // the second task shares no word with read_file: only the embedding finds it
    const request = 'Show the weather forecast, weather alerts and weather radar for Paris. Then open my document.';
    const calls = embedder.calls;
    const top = (await svc.retrieve(request, 3)).map((h) => h.name);
    // the whole request and each task are embedded in one call
    expect(embedder.calls).toBe(calls + 1);
    // the salient weather task does not take every place: the document task keeps its own
    expect(top).toContain('read_file');
    expect(top.filter((n) => n.startsWith('weather_'))).toHaveLength(2);
  });
});
