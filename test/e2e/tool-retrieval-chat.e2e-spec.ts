import { startApp, type TestApp } from '../support/app';
import { ReplayServer, respond } from '../support/replay-server';
import { sse } from '../support/sse-client';
import type { ToolDefinition, ToolExecuteResult } from '../../src/tools/tool-definition';
import { ToolRegistryService } from '../../src/tools/tool-registry.service';

/**
 * Issue 15 item 2 over HTTP: a project with 200 tools. Each model step of a chat turn is offered
 * the top-K tools for the request (re-ranked with the model's latest text) plus the tools called
 * in this turn, not the whole catalog; each step is traced as `tool_retrieval`.
 */
const SUBJECTS = [
  'weather forecast', 'currency exchange rate', 'restaurant table booking', 'flight status', 'stock quote',
  'calendar event', 'email inbox', 'translation', 'unit conversion', 'package tracking',
];
const VERBS = ['get', 'list', 'create', 'delete', 'update', 'search', 'export', 'archive', 'share', 'count',
  'watch', 'compare', 'summarize', 'import', 'validate', 'schedule', 'cancel', 'rename', 'tag', 'print'];

function catalog(): ToolDefinition[] {
  const tools: ToolDefinition[] = [];
  for (const subject of SUBJECTS) {
    for (const verb of VERBS) {
      const name = `${verb}_${subject.replace(/ /g, '_')}`;
      tools.push({
        name,
        description: `${verb[0].toUpperCase()}${verb.slice(1)} ${subject} records`,
        parameters: { type: 'object', properties: { query: { type: 'string', description: `which ${subject}` } } },
        origin: 'builtin',
        isAvailable: () => true,
        execute: async (): Promise<ToolExecuteResult> => ({ output: { ok: name } }),
      });
    }
  }
  return tools;
}

describe.each([
  ['unified', '/api/chat/messages', (content: string) => ({ content })],
  ['two-stage', '/api/chat/messages_two_stage', (content: string) => ({ content, options: {} })],
])('sticky top-K tool selection on the %s route (200 tools)', (_p, route, body) => {
  let llm: ReplayServer;
  let t: TestApp;
  const TOP_K = 6;

  beforeAll(async () => {
    llm = await ReplayServer.start();
    t = await startApp({ LLM_PROVIDER: 'openai', LLM_BASE_URL: llm.openAiBaseUrl, LLM_MODEL: 'scripted-model', TWO_STAGE_ENABLED: 'true', TOOL_RETRIEVAL_TOP_K: String(TOP_K) });
    const registry = t.app.get(ToolRegistryService);
    for (const tool of catalog()) registry.register(tool);
  });
  afterAll(async () => {
    await t.close();
    await llm.close();
  });
  beforeEach(() => llm.reset());

  const offered = (i: number) => ((llm.chatRequests[i].body as { tools?: Array<{ function: { name: string } }> }).tools ?? []).map((x) => x.function.name);

  /** The system message a step sent (two-stage sends none naming tools: empty). */
  const systemText = (i: number) =>
    ((llm.chatRequests[i].body as { messages: Array<{ role: string; content: unknown }> }).messages ?? [])
      .filter((m) => m.role === 'system')
      .map((m) => (typeof m.content === 'string' ? m.content : JSON.stringify(m.content)))
      .join('\n');

  it('offers the tools the request needs, keeps a called tool, re-ranks with the model text, and traces each step', async () => {
    const catalogSize = (await (await fetch(`${t.url}/api/tools`)).json().catch(() => [])).length;
    llm.enqueue(
      respond.turn([{ text: 'First the weather forecast.' }, { toolCall: { name: 'get_weather_forecast', args: { query: 'Paris' } } }]),
      respond.turn([{ text: 'Now the currency exchange rate.' }, { toolCall: { name: 'get_currency_exchange_rate', args: { query: 'EUR' } } }]),
      respond.turn([{ text: 'Paris is sunny; 20 EUR is 21.6 USD.' }]),
    );
    const { events } = await sse(`${t.url}${route}`, { body: body('Get the weather forecast in Paris, then get the currency exchange rate for 20 euros'), timeoutMs: 30_000 });
    const done = events.at(-1)!;
    expect(done.data.stopReason).toBe('final_answer');
    expect(llm.chatRequests).toHaveLength(3);

    const step1 = offered(0);
    expect(step1).toEqual(expect.arrayContaining(['get_weather_forecast', 'get_currency_exchange_rate']));
    expect(step1.length).toBeLessThan(40);
    if (catalogSize) expect(step1.length).toBeLessThan(catalogSize);
    // the tool called in step 1 is still offered in step 2
    expect(offered(1)).toContain('get_weather_forecast');
    expect(offered(1)).toContain('get_currency_exchange_rate');
    // the prompt text describes only the offered tools, not the whole catalog
    for (const i of [0, 1]) {
      const system = systemText(i);
      const described = catalog().map((x) => x.name).filter((n) => system.includes(`- ${n}:`));
      if (_p === 'unified') expect(described.length).toBeGreaterThan(0);
      expect(described.every((n) => offered(i).includes(n))).toBe(true);
    }

    const trace = await (await fetch(`${t.url}/api/trace?requestId=${done.data.requestId}`)).json();
    const records = (Array.isArray(trace) ? trace : trace.items ?? trace.events ?? []) as Array<{ type: string; details: Record<string, unknown> }>;
    const retrievals = records.filter((r) => r.type === 'tool_retrieval');
    expect(retrievals.length).toBeGreaterThanOrEqual(2);
    expect(retrievals[0].details).toMatchObject({ applied: true, topK: TOP_K });
    expect((retrievals[0].details.catalogSize as number)).toBeGreaterThanOrEqual(200);
    const second = retrievals[1].details.selected as Array<{ name: string; reason: string }>;
    expect(second.find((s) => s.name === 'get_weather_forecast')?.reason).toBe('called_this_turn');
  });

  it("keeps offering the tools the conversation's previous turn called, from that answer's stored steps", async () => {
    llm.enqueue(
      respond.turn([{ toolCall: { name: 'watch_package_tracking', args: { query: 'parcel 42' } } }]),
      respond.turn([{ text: 'Your parcel is out for delivery.' }]),
    );
    const first = await sse(`${t.url}${route}`, { body: body('Watch the package tracking of parcel 42'), timeoutMs: 30_000 });
    expect(first.events.at(-1)!.data.stopReason).toBe('final_answer');
    const conversationId = first.events[0].data.conversationId as string;
    llm.reset();
    // a follow-up whose words retrieve other tools: the previous turn's tool stays on offer
    llm.enqueue(respond.turn([{ text: 'Still out for delivery; the flight is on time.' }]));
    const second = await sse(`${t.url}${route}`, { body: { ...body('And check the flight status of AF 123 as well'), conversationId }, timeoutMs: 30_000 });
    expect(second.events.at(-1)!.data.stopReason).toBe('final_answer');
    expect(offered(0)).toContain('watch_package_tracking');
    expect(offered(0).some((n) => n.endsWith('_flight_status'))).toBe(true);
    expect(offered(0).length).toBeLessThan(40);
    const trace = (await (await fetch(`${t.url}/api/trace?requestId=${second.events[0].data.requestId}&type=tool_retrieval`)).json()) as Array<{ details: { selected: Array<{ name: string; reason: string }> } }>;
    expect(trace[0].details.selected.find((x) => x.name === 'watch_package_tracking')?.reason).toBe('last_turn');
  });
});
