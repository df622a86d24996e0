import type { AppConfigService } from '../../../config/app-config.service';
import type { LlmMessage, LlmToolSpec } from '../../../llm/llm-adapter.port';
import type { ToolDefinition } from '../../../tools/tool-definition';
import { ToolRegistryService } from '../../../tools/tool-registry.service';
import type { TraceSink } from '../../../trace/trace-sink.port';
import { ToolIndexService } from './tool-index.service';
import { toolRetrievalTrace, toolsOfLastTurn } from './tool-selection';
import { ToolSelectionService } from './tool-selection.service';

const sink: TraceSink = { record() {}, flush: async () => {} };
const configWith = (values: Record<string, unknown>) =>
  ({ list: () => [], get: (k: string) => (k === 'TOOL_INDEX_ENABLED' ? true : values[k]) }) as unknown as AppConfigService;

/** 200 MCP-style tools: 196 fillers on unrelated topics plus four the requests below need. */
function catalog(): ToolDefinition[] {
  const topics = ['invoice', 'playlist', 'satellite', 'recipe', 'parcel', 'ticket', 'sensor'];
  const actions = ['create', 'delete', 'archive', 'list', 'rename', 'share', 'export'];
  const out: ToolDefinition[] = [];
  for (let i = 0; out.length < 196; i++) {
    const topic = topics[i % topics.length];
    const action = actions[Math.floor(i / topics.length) % actions.length];
    out.push(def(`${topic}_${action}_${i}`, `${action} a ${topic} record number ${i} in the ${topic} service`));
  }
  out.push(def('get_weather', 'Current weather conditions and temperature for a city'));
  out.push(def('convert_currency', 'Convert an amount of money from one currency to another'));
  out.push(def('book_table', 'Reserve a table at a restaurant for a number of guests'));
  out.push(def('list_files', 'List the files of a folder in the workspace'));
  return out;
}

function def(name: string, description: string): ToolDefinition {
  return { name, description, parameters: { type: 'object', properties: {} }, origin: 'mcp:fixture', isAvailable: () => true, execute: async () => ({ output: null }) };
}

function setup(values: Record<string, unknown> = {}) {
  const registry = new ToolRegistryService(configWith({}), sink);
  const tools = catalog();
  for (const t of tools) registry.register(t);
  const specs: LlmToolSpec[] = tools.map(({ name, description, parameters }) => ({ name, description, parameters }));
  const svc = new ToolSelectionService(new ToolIndexService(registry), configWith(values));
  return { svc, specs };
}

describe('ToolSelectionService (sticky top-K)', () => {
  it('offers at most K + sticky tools of a 200-tool catalog, and the ones the request needs', () => {
    const { svc, specs } = setup({ TOOL_RETRIEVAL_TOP_K: 5 });
    const sel = svc.select({ catalog: specs, request: 'What is the weather in Paris, then convert 20 euros to dollars and book a table for four', builtins: ['list_files'] });
    expect(sel.applied).toBe(true);
    const names = sel.tools.map((t) => t.name);
    expect(names.length).toBeLessThanOrEqual(5 + 1);
    expect(names).toEqual(expect.arrayContaining(['get_weather', 'convert_currency', 'book_table', 'list_files']));
    expect(sel.selected.find((s) => s.name === 'list_files')).toMatchObject({ reason: 'builtin' });
    const ranks = ['get_weather', 'convert_currency', 'book_table'].map((n) => sel.selected.find((s) => s.name === n));
    expect(ranks.map((r) => r?.reason)).toEqual(['retrieved', 'retrieved', 'retrieved']);
    expect(ranks.map((r) => r?.rank).sort()).toEqual([1, 2, 3]);
  });

  it('keeps a tool called in step 1 in step 2 even when the new text no longer matches it, and re-ranks with the model text', () => {
    const { svc, specs } = setup({ TOOL_RETRIEVAL_TOP_K: 2 });
    const step1 = svc.select({ catalog: specs, request: 'What is the weather in Paris?' });
    expect(step1.tools.map((t) => t.name)).toContain('get_weather');
    const step2 = svc.select({ catalog: specs, request: 'What is the weather in Paris?', latestModelText: 'Now I will convert the currency amount.', calledThisTurn: ['get_weather'] });
    const names = step2.tools.map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(['get_weather', 'convert_currency']));
    expect(names.length).toBeLessThanOrEqual(2 + 1);
    expect(step2.selected.find((s) => s.name === 'get_weather')?.reason).toBe('called_this_turn');
  });

  it('keeps the tools of the last turn for a follow-up that names no tool, and ignores names outside the catalog', () => {
    const { svc, specs } = setup({ TOOL_RETRIEVAL_TOP_K: 3 });
    const history: LlmMessage[] = [
      { role: 'user', content: 'Reserve somewhere for dinner' },
      { role: 'assistant', content: null, toolCalls: [{ id: 'c1', name: 'book_table', arguments: '{}' } as never] },
      { role: 'tool', content: 'ok', toolCallId: 'c1' },
      { role: 'assistant', content: 'Booked.' },
      { role: 'user', content: 'and the same for tomorrow' },
    ];
    const sel = svc.select({ catalog: specs, request: 'and the same for tomorrow', lastTurnTools: [...toolsOfLastTurn(history), 'gone_tool'] });
    expect(sel.tools.map((t) => t.name)).toContain('book_table');
    expect(sel.tools.map((t) => t.name)).not.toContain('gone_tool');
  });

  it('offers the whole catalog at or below the threshold', () => {
    const { svc, specs } = setup({ TOOL_RETRIEVAL_THRESHOLD: 200 });
    const sel = svc.select({ catalog: specs, request: 'weather in Paris' });
    expect(sel.applied).toBe(false);
    expect(sel.tools).toHaveLength(200);
    expect(toolRetrievalTrace(sel, { requestId: 'r', projectId: 'p', step: 1 })).toMatchObject({ type: 'tool_retrieval', details: { applied: false, offered: 200 } });
  });

  it('ranks catalog tools the shared index does not hold', () => {
    const { svc, specs } = setup({ TOOL_RETRIEVAL_TOP_K: 2 });
    const extra = [...specs, { name: 'ask_user', description: 'Ask the user a clarifying question', parameters: {} }];
    const sel = svc.select({ catalog: extra, request: 'ask the user a clarifying question about the trip' });
    expect(sel.tools.map((t) => t.name)).toContain('ask_user');
  });

  it('traces the chosen set with ranks and reasons', () => {
    const { svc, specs } = setup({ TOOL_RETRIEVAL_TOP_K: 3 });
    const sel = svc.select({ catalog: specs, request: 'convert 20 euros to dollars', calledThisTurn: ['get_weather'] });
    const rec = toolRetrievalTrace(sel, { requestId: 'r1', projectId: 'p1', step: 2 });
    expect(rec.details).toMatchObject({ step: 2, applied: true, catalogSize: 200, topK: 3 });
    const selected = (rec.details as { selected: Array<{ name: string; reason: string; rank: number | null }> }).selected;
    expect(selected[0]).toEqual(expect.objectContaining({ name: 'get_weather', reason: 'called_this_turn', rank: null }));
    expect(selected.find((s) => s.name === 'convert_currency')).toEqual(expect.objectContaining({ reason: 'retrieved', rank: 1 }));
  });
});

describe('toolsOfLastTurn', () => {
  it('names the calls between the last two user messages only', () => {
    const call = (name: string) => ({ role: 'assistant' as const, content: null, toolCalls: [{ id: name, name, arguments: '{}' } as never] });
    const msgs: LlmMessage[] = [{ role: 'user', content: 'a' }, call('old'), { role: 'user', content: 'b' }, call('x'), call('y'), { role: 'user', content: 'c' }];
    expect(toolsOfLastTurn(msgs)).toEqual(['x', 'y']);
    expect(toolsOfLastTurn([{ role: 'user', content: 'first' }])).toEqual([]);
  });
});
