import { startApp, type TestApp } from '../support/app';
import { ReplayServer, respond } from '../support/replay-server';
import { sse, type SseEvent } from '../support/sse-client';
import type { ToolDefinition, ToolExecuteResult } from '../../src/tools/tool-definition';
import { ToolRegistryService } from '../../src/tools/tool-registry.service';
import { failingTool } from '../support/test-tools';

const broken = failingTool('dictionary_service', 'dictionary service answered 502 Bad Gateway');

/** a configured secret (the model key) that the scripted model will try to say */
const CANARY = 'canary-SECRET-0123456789';

const lookup: ToolDefinition = {
  name: 'lookup',
  description: 'Looks a word up',
  parameters: { type: 'object', properties: { word: { type: 'string' } }, required: ['word'] },
  origin: 'builtin',
  isAvailable: () => true,
  execute: async (): Promise<ToolExecuteResult> => ({ output: { meaning: 'a small dog' } }),
};

/** Issue 13, items 3 and 4 over HTTP on both routes: separated steps, a cut-off answer that says so. */
describe.each([
  ['unified', '/api/chat/messages', (content: string) => ({ content })],
  ['two-stage', '/api/chat/messages_two_stage', (content: string) => ({ content, options: {} })],
])('turn semantics on the %s route', (_protocol, route, body) => {
  let llm: ReplayServer;
  let t: TestApp;

  beforeAll(async () => {
    llm = await ReplayServer.start();
    t = await startApp({ LLM_PROVIDER: 'openai', LLM_BASE_URL: llm.openAiBaseUrl, LLM_MODEL: 'scripted-model', TWO_STAGE_ENABLED: 'true', LLM_API_KEY: CANARY });
    t.app.get(ToolRegistryService).register(lookup);
    t.app.get(ToolRegistryService).register(broken);
  });
  afterAll(async () => {
    await t.close();
    await llm.close();
  });
  beforeEach(() => llm.reset());

  const send = (content: string) => sse(`${t.url}${route}`, { body: body(content), timeoutMs: 30_000 });
  const of = (events: SseEvent[], type: string) => events.filter((e) => e.event === type);
  const storedMessage = async (events: SseEvent[]) => {
    const msgs = await (await fetch(`${t.url}/api/chat/conversations/${events[0].data.conversationId}/messages`)).json();
    return msgs.find((m: { role: string; requestId: string }) => m.role === 'assistant' && m.requestId === events[0].data.requestId);
  };

  it('joins the text of two model steps with a paragraph break in the stream, fullContent and the stored message', async () => {
    llm.enqueue(respond.turn([{ text: 'Let me look it up.' }, { toolCall: { name: 'lookup', args: { word: 'pug' }, id: 'c1' } }]), respond.turn([{ text: 'Summary: a pug is a small dog.' }]));
    const { events } = await send('What is a pug?');
    const done = events.at(-1)!.data;
    expect(done.fullContent).toBe('Let me look it up.\n\nSummary: a pug is a small dog.');
    expect(of(events, 'chunk').map((e) => e.data.content).join('')).toBe(done.fullContent);
    const message = await storedMessage(events);
    expect(message.content).toBe(done.fullContent);
    expect(message.stopReason).toBe('final_answer');
  });

  it('an answer cut off by the token limit ends with a notice and stopReason max_tokens, kept on the stored message', async () => {
    llm.enqueue(respond.turn([{ text: 'The history of pugs begins in' }, { finish: 'length' }]));
    const { events } = await send('Tell me everything about pugs.');
    expect(of(events, 'notice').map((e) => e.data.code)).toEqual(['response_truncated']);
    expect(events.at(-1)!.data.stopReason).toBe('max_tokens');
    const message = await storedMessage(events);
    expect(message).toMatchObject({ content: 'The history of pugs begins in', status: 'complete', stopReason: 'max_tokens' });
  });

  it('a tool that fails says why in a tool_phase error stage for that call, before its failed progress; a working call says nothing of the kind', async () => {
    llm.enqueue(
      respond.turn([{ toolCall: { name: 'lookup', args: { word: 'pug' }, id: 'ok1' } }]),
      respond.turn([{ toolCall: { name: 'dictionary_service', args: { word: 'pug' }, id: 'bad1' } }]),
      respond.turn([{ text: 'The dictionary is down; a pug is a small dog.' }]),
    );
    const { events } = await send('What is a pug, per the dictionary?');
    const errors = of(events, 'tool_phase').filter((e) => e.data.stage === 'error');
    expect(errors).toHaveLength(1);
    expect(errors[0].data).toMatchObject({ toolId: 'dictionary_service', metadata: { callId: 'bad1', outcome: 'exception' } });
    expect(errors[0].data.message).toContain('502 Bad Gateway');
    const failed = events.findIndex((e) => e.event === 'tool_progress' && e.data.callId === 'bad1' && e.data.action === 'failed');
    expect(failed).toBeGreaterThan(events.indexOf(errors[0]));
    expect(events.at(-1)!.data.stopReason).toBe('final_answer');
  });

  it('a configured secret split across model chunks reaches neither the stream, the stored events nor the stored message', async () => {
    llm.enqueue(respond.turn([{ text: 'Your key: canary-SEC' }, { text: 'RET-0123' }, { text: '456789. Keep it safe.' }]));
    const { events } = await send('What is my key?');
    const done = events.at(-1)!.data;
    const streamed = of(events, 'chunk').map((e) => e.data.content).join('');
    const stored = await (await fetch(`${t.url}/api/chat/runs/${done.requestId}/events`)).text();
    const message = await storedMessage(events);
    for (const text of [streamed, String(done.fullContent), stored, JSON.stringify(message)]) {
      expect(text).not.toContain(CANARY);
      expect(text).not.toContain('RET-0123456789');
    }
    expect(streamed).toMatch(/^Your key: .+\. Keep it safe\.$/);
    expect(message.content).toBe(streamed);
  });
});
