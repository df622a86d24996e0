import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startApp, type TestApp } from '../support/app';
import { ndjsonFromEvents, ReplayServer, respond } from '../support/replay-server';
import { sse } from '../support/sse-client';

/**
 * Issue 13 item 6 over HTTP: LLM_MODELS is the allow-list (first = default); a conversation's
 * `model` setting and a message's `options.model` pick one, the message winning; anything
 * else is a 400 that stores nothing. The model server sees which model each turn asked for.
 */
describe.each([
  ['unified', '/api/chat/messages'],
  ['two-stage', '/api/chat/messages_two_stage'],
])('models per conversation (%s route)', (_name, route) => {
  let llm: ReplayServer;
  let t: TestApp;
  beforeAll(async () => {
    llm = await ReplayServer.start();
    t = await startApp({ LLM_PROVIDER: 'openai', LLM_BASE_URL: llm.openAiBaseUrl, LLM_MODELS: 'model-a,model-b', TWO_STAGE_ENABLED: 'true' });
  });
  afterAll(async () => {
    await t?.close();
    await llm?.close();
  });

  /** Sends one turn; returns the models the server was asked for and the start event. */
  const turn = async (body: Record<string, unknown>, answer: string) => {
    llm.reset();
    llm.enqueue(respond.turn([{ text: answer }]));
    const res = await sse(`${t.url}${route}`, { body: { options: {}, ...body }, timeoutMs: 20_000 });
    expect(res.status).toBe(200);
    expect(res.events.at(-1)!.event).toBe('done');
    return { asked: [...new Set(llm.chatRequests.map((r) => (r.body as { model: string }).model))], start: res.events[0], conversationId: res.events[0].data.conversationId as string };
  };
  const messages = async (id: string) => (await (await fetch(`${t.url}/api/chat/conversations/${id}/messages`)).json()) as Array<{ role: string; content: string; model: string | null }>;
  const patch = (id: string, settings: Record<string, unknown>) =>
    fetch(`${t.url}/api/chat/conversations/${id}/settings`, { method: 'PATCH', headers: { 'content-type': 'application/json' }, body: JSON.stringify(settings) });

  it('uses the default, then the conversation setting, then the message option, and records each', async () => {
    const first = await turn({ content: 'Hello' }, 'Answer from A.');
    expect(first.asked).toEqual(['model-a']);
    expect(first.start).toMatchObject({ event: 'start', data: { model: 'model-a' } });
    const id = first.conversationId;

    const set = await patch(id, { model: 'model-b' });
    expect(set.status).toBe(200);
    expect((await set.json()).settings).toMatchObject({ model: 'model-b' });
    const second = await turn({ content: 'Again', conversationId: id }, 'Answer from B.');
    expect(second.asked).toEqual(['model-b']);
    expect(second.start).toMatchObject({ event: 'start', data: { model: 'model-b' } });

    const third = await turn({ content: 'Once more', conversationId: id, options: { model: 'model-a' } }, 'A again.');
    expect(third.asked).toEqual(['model-a']);
    const started = await (await fetch(`${t.url}/api/trace?requestId=${third.start.data.requestId}&type=run_started`)).json();
    expect(started).toMatchObject([{ details: { model: 'model-a' } }]);

    // the setting still holds after a one-off message option
    const fourth = await turn({ content: 'And B?', conversationId: id }, 'B again.');
    expect(fourth.asked).toEqual(['model-b']);

    const stored = (await messages(id)).filter((m) => m.role === 'assistant');
    expect(stored.map((m) => [m.content, m.model])).toEqual([
      ['Answer from A.', 'model-a'],
      ['Answer from B.', 'model-b'],
      ['A again.', 'model-a'],
      ['B again.', 'model-b'],
    ]);
  });

  it('refuses a model outside LLM_MODELS with 400 model_not_allowed and stores nothing', async () => {
    const { conversationId: id } = await turn({ content: 'Hello' }, 'Hi.');
    const before = (await messages(id)).length;
    llm.reset();

    const bad = await sse(`${t.url}${route}`, { body: { content: 'Use X', conversationId: id, options: { model: 'model-x' } } });
    expect(bad.status).toBe(400);
    expect(JSON.parse(bad.body)).toMatchObject({ statusCode: 400, error: 'model_not_allowed' });
    expect(JSON.parse(bad.body).message).toContain('model-a, model-b');

    const badNew = await sse(`${t.url}${route}`, { body: { content: 'Use X in a new conversation', options: { model: 'model-x' } } });
    expect(badNew.status).toBe(400);
    const list = (await (await fetch(`${t.url}/api/chat/conversations`)).json()) as Array<{ title: string }>;
    expect(list.some((c) => c.title.includes('new conversation'))).toBe(false);

    const badSetting = await patch(id, { model: 'model-x' });
    expect(badSetting.status).toBe(400);
    expect((await badSetting.json()).error).toBe('model_not_allowed');

    expect(llm.chatRequests).toHaveLength(0);
    expect((await messages(id)).length).toBe(before);
    const conv = (await (await fetch(`${t.url}/api/chat/conversations`)).json()) as Array<{ id: string; settings: Record<string, unknown> }>;
    expect(conv.find((c) => c.id === id)!.settings).not.toHaveProperty('model');
  });

  it('lists both models in the capabilities, the first as default', async () => {
    const caps = await (await fetch(`${t.url}/api/config/capabilities`)).json();
    expect(caps.model).toBe('model-a');
    expect(caps.models).toEqual([
      { name: 'model-a', default: true, toolCalling: true, contextWindow: 32768 },
      { name: 'model-b', default: false, toolCalling: true, contextWindow: 32768 },
    ]);
  });
});

describe('without LLM_MODELS', () => {
  let llm: ReplayServer;
  let t: TestApp;
  beforeAll(async () => {
    llm = await ReplayServer.start();
    t = await startApp({ LLM_PROVIDER: 'openai', LLM_BASE_URL: llm.openAiBaseUrl, LLM_MODEL: 'only-model' });
  });
  afterAll(async () => {
    await t?.close();
    await llm?.close();
  });

  it('LLM_MODEL is the one model: naming it works, naming another is a 400', async () => {
    llm.enqueue(respond.turn([{ text: 'Fine.' }]));
    const ok = await sse(`${t.url}/api/chat/messages`, { body: { content: 'Hi', options: { model: 'only-model' } }, timeoutMs: 20_000 });
    expect(ok.events.at(-1)!.event).toBe('done');
    expect((llm.chatRequests.at(-1)!.body as { model: string }).model).toBe('only-model');

    const bad = await sse(`${t.url}/api/chat/messages`, { body: { content: 'Hi', options: { model: 'model-b' } } });
    expect(bad.status).toBe(400);
    expect(JSON.parse(bad.body).error).toBe('model_not_allowed');
    expect((await (await fetch(`${t.url}/api/config/capabilities`)).json()).models).toEqual([{ name: 'only-model', default: true, toolCalling: true, contextWindow: 32768 }]);
  });
});

describe('capabilities per model (Ollama /api/show)', () => {
  let llm: ReplayServer;
  let t: TestApp;
  const show = (capabilities: string[], contextLength: number) => respond.json({ capabilities, model_info: { 'qwen3.context_length': contextLength } });
  beforeAll(async () => {
    llm = await ReplayServer.start({ show: show(['completion', 'tools'], 16384) });
    t = await startApp({ LLM_PROVIDER: 'ollama', LLM_BASE_URL: llm.ollamaBaseUrl, LLM_MODELS: 'big-model,small-model', LLM_MODEL: 'big-model' });
  });
  afterAll(async () => {
    await t?.close();
    await llm?.close();
  });

  it('asks each model once and keeps its answer; the list shows what each model reported', async () => {
    const turnOn = async (model: string) => {
      llm.enqueue(ndjsonFromEvents([{ text: `From ${model}.` }]));
      const res = await sse(`${t.url}/api/chat/messages`, { body: { content: 'Hi', options: { model } }, timeoutMs: 20_000 });
      expect(res.events.at(-1)!.event).toBe('done');
      expect((llm.chatRequests.at(-1)!.body as { model: string }).model).toBe(model);
    };
    await turnOn('big-model');
    // the server now answers differently: only a model not asked yet sees it
    llm.setShow(show(['completion'], 8192));
    await turnOn('small-model');
    llm.setShow(show([], 2048));

    const caps = await (await fetch(`${t.url}/api/config/capabilities`)).json();
    expect(caps.models).toEqual([
      { name: 'big-model', default: true, toolCalling: true, contextWindow: 16384 },
      { name: 'small-model', default: false, toolCalling: false, contextWindow: 8192 },
    ]);
    const asked = llm.requests.filter((r) => r.path === '/api/show').map((r) => (r.body as { model: string }).model);
    expect(asked.sort()).toEqual(['big-model', 'small-model']);
  });
});

describe('a resumed run keeps its model', () => {
  let llm: ReplayServer;
  let t: TestApp;
  beforeAll(async () => {
    llm = await ReplayServer.start();
    t = await startApp({ LLM_PROVIDER: 'openai', LLM_BASE_URL: llm.openAiBaseUrl, LLM_MODELS: 'model-a,model-b', TWO_STAGE_ENABLED: 'true' });
    mkdirSync(join(t.workspace, 'default'), { recursive: true });
    writeFileSync(join(t.workspace, 'default', 'notes.md'), 'notes\n');
  });
  afterAll(async () => {
    await t?.close();
    await llm?.close();
  });

  it('pauses a model-b turn after its tool, resumes it on model-b (not the default)', async () => {
    llm.enqueue(respond.turn([{ toolCall: { name: 'list_files', args: {} } }], { faults: { delayMs: 50 } }));
    const post = (url: string, body: unknown) => fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const first = await sse(`${t.url}/api/chat/messages_two_stage`, {
      body: { content: 'look', options: { model: 'model-b' } },
      onEvent: (e) => (e.event === 'start' ? void post(`${t.url}/api/chat/runs/${e.data.requestId}/pause`, {}) : undefined),
      timeoutMs: 20_000,
    });
    expect(first.events.at(-1)!.event).toBe('paused');
    const { requestId, conversationId } = first.events[0].data as { requestId: string; conversationId: string };

    llm.enqueue(respond.turn([{ text: 'Resumed on B.' }]));
    const resumed = await sse(`${t.url}/api/chat/messages_two_stage/resume`, { body: { requestId, resumeFromPhaseIndex: first.events.at(-1)!.data.resumeFromPhaseIndex }, timeoutMs: 20_000 });
    expect(resumed.events[0]).toMatchObject({ event: 'start', data: { resumed: true, model: 'model-b' } });
    expect(resumed.events.at(-1)!.event).toBe('done');
    expect(llm.chatRequests.map((r) => (r.body as { model: string }).model)).toEqual(['model-b', 'model-b']);
    const stored = (await (await fetch(`${t.url}/api/chat/conversations/${conversationId}/messages`)).json()) as Array<{ role: string; model: string | null }>;
    expect(stored.map((m) => [m.role, m.model])).toEqual([
      ['user', null],
      ['assistant', 'model-b'],
    ]);
  });
});
