import { startApp, type TestApp } from '../support/app';
import { ndjsonFromEvents, ReplayServer, respond } from '../support/replay-server';
import { sse } from '../support/sse-client';

/**
 * Issue 13 item 5 over HTTP: the request bodies a model server receives when a turn decides
 * tools, per family of server, with LLM_THINKING and LLM_EXTRA_BODY.
 */
describe('thinking off where the server can skip it (request bodies)', () => {
  // Each case boots one or two apps of its own (the setting is read at start), which takes
  // well over the default 30 s on a loaded 2-core machine.
  const BOOTS = 120_000;
  let llm: ReplayServer;
  beforeAll(async () => {
    llm = await ReplayServer.start({ show: respond.json({ capabilities: ['completion', 'tools', 'thinking'] }) });
  });
  afterAll(() => llm.close());
  beforeEach(() => llm.reset());

  const firstBody = async (env: Record<string, string>, route = '/api/chat/messages'): Promise<Record<string, unknown>> => {
    const ollama = env.LLM_PROVIDER === 'ollama';
    const t: TestApp = await startApp({ LLM_PROVIDER: 'openai', LLM_BASE_URL: ollama ? llm.ollamaBaseUrl : llm.openAiBaseUrl, TWO_STAGE_ENABLED: 'true', ...env });
    try {
      llm.enqueue(ollama ? ndjsonFromEvents([{ text: 'Hi.' }]) : respond.turn([{ text: 'Hi.' }]));
      const { events } = await sse(`${t.url}${route}`, { body: route.endsWith('two_stage') ? { content: 'Hello', options: {} } : { content: 'Hello' }, timeoutMs: 20_000 });
      expect(events.at(-1)!.event).toBe('done');
      return llm.chatRequests.at(-1)!.body as Record<string, unknown>;
    } finally {
      await t.close();
    }
  };

  it.each([
    ['Qwen3 on vLLM / SGLang', 'Qwen/Qwen3-8B', { chat_template_kwargs: { enable_thinking: false } }],
    ['a Qwen3 quantisation on llama.cpp', 'qwen3:14b-q4_K_M', { chat_template_kwargs: { enable_thinking: false } }],
    ['DeepSeek', 'deepseek-v3.1', { thinking: { type: 'disabled' } }],
    ['OpenAI gpt-5', 'gpt-5-mini', { reasoning_effort: 'minimal' }],
    ['OpenAI o-series', 'o4-mini', { reasoning_effort: 'low' }],
  ])('%s (%s) gets its own switch on both chat routes', async (_family, model, fields) => {
    expect(await firstBody({ LLM_MODEL: model })).toMatchObject(fields);
    expect(await firstBody({ LLM_MODEL: model }, '/api/chat/messages_two_stage')).toMatchObject(fields);
  }, BOOTS);

  it('sends no switch to a model of unknown family (an unknown field can make a server answer 400)', async () => {
    const body = await firstBody({ LLM_MODEL: 'llama-3.1-8b-instruct' });
    for (const k of ['chat_template_kwargs', 'thinking', 'reasoning_effort', 'think']) expect(body).not.toHaveProperty(k);
  }, BOOTS);

  it('LLM_THINKING_SWITCH names the family when the model name does not tell', async () => {
    expect(await firstBody({ LLM_MODEL: 'my-finetune', LLM_THINKING_SWITCH: 'qwen' })).toMatchObject({ chat_template_kwargs: { enable_thinking: false } });
    const none = await firstBody({ LLM_MODEL: 'Qwen3-8B', LLM_THINKING_SWITCH: 'none' });
    expect(none).not.toHaveProperty('chat_template_kwargs');
  }, BOOTS);

  it('LLM_THINKING=on sends no switch', async () => {
    expect(await firstBody({ LLM_MODEL: 'Qwen3-8B', LLM_THINKING: 'on' })).not.toHaveProperty('chat_template_kwargs');
    expect(await firstBody({ LLM_PROVIDER: 'ollama', LLM_MODEL: 'qwen3', LLM_THINKING: 'on' })).not.toHaveProperty('think');
  }, BOOTS);

  it('Ollama gets think: false for a model that thinks', async () => {
    expect(await firstBody({ LLM_PROVIDER: 'ollama', LLM_MODEL: 'qwen3' })).toMatchObject({ think: false });
  }, BOOTS);

  it('LLM_EXTRA_BODY is merged into every request; it cannot replace the model or messages', async () => {
    const body = await firstBody({ LLM_MODEL: 'Qwen3-8B', LLM_EXTRA_BODY: JSON.stringify({ top_k: 20, chat_template_kwargs: { enable_thinking: true }, model: 'other' }) });
    expect(body).toMatchObject({ top_k: 20, chat_template_kwargs: { enable_thinking: true }, model: 'Qwen3-8B' });
    expect(Array.isArray(body.messages)).toBe(true);
  }, BOOTS);

  it('refuses to start with an LLM_EXTRA_BODY that is not a JSON object', async () => {
    await expect(startApp({ LLM_PROVIDER: 'openai', LLM_BASE_URL: llm.openAiBaseUrl, LLM_MODEL: 'm', LLM_EXTRA_BODY: '[1,2]' })).rejects.toThrow(/LLM_EXTRA_BODY must be a JSON object/);
  }, BOOTS);
});
