import { Logger } from '@nestjs/common';
import { collectStream } from '../../../test/support/llm-stream-collector';
import { ndjsonFromEvents, ReplayServer, respond, times } from '../../../test/support/replay-server';
import { LlmError, type LlmRequest } from '../llm-adapter.port';
import type { HttpAdapterOptions } from './http-adapter.options';
import { OllamaAdapter } from './ollama.adapter';

const ASK: LlmRequest = { messages: [{ role: 'user', content: 'Weather in Tokyo?' }] };
const WEATHER = { name: 'get_weather', description: 'Weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } };

describe('OllamaAdapter', () => {
  let server: ReplayServer;

  beforeAll(async () => {
    Logger.overrideLogger(false);
    server = await ReplayServer.start();
  });
  afterEach(() => server.reset().setShow(respond.json({ capabilities: ['completion', 'tools'] })));
  afterAll(() => server.close());

  const adapter = (over: Partial<HttpAdapterOptions> = {}) =>
    new OllamaAdapter({
      baseUrl: server.ollamaBaseUrl,
      model: 'llama3.2',
      timeoutMs: 10_000,
      idleTimeoutMs: 5_000,
      contextWindow: 8192,
      retry: { baseDelayMs: 5, maxDelayMs: 20 },
      ...over,
    });

  it('streams /api/chat NDJSON: whole tool calls get ids and indices, done → finish with usage', async () => {
    server.enqueue(
      ndjsonFromEvents([
        { reasoning: 'hmm' },
        { text: 'Looking up. ' },
        { toolCall: { name: 'get_weather', args: { city: 'Tokyo' } } },
        { toolCall: { name: 'get_weather', args: { city: 'Oslo' } } },
      ]),
    );
    const got = await collectStream(adapter().stream({ ...ASK, tools: [WEATHER] }));
    expect(got.reasoning).toBe('hmm');
    expect(got.text).toBe('Looking up. ');
    expect(got.toolCalls.map((c) => [c.name, c.args])).toEqual([
      ['get_weather', { city: 'Tokyo' }],
      ['get_weather', { city: 'Oslo' }],
    ]);
    const ids = got.toolCalls.map((c) => c.id);
    expect(new Set(ids).size).toBe(2);
    expect(got.events.filter((e) => e.type === 'tool-call-delta').map((e) => (e as { index: number }).index)).toEqual([0, 1]);
    expect(got.finishes).toEqual([{ reason: 'tool_calls', rawReason: 'stop', usage: expect.objectContaining({ promptTokens: 12 }) }]);
  });

  it('sends the native request: object arguments, tool_name, options; strips /v1 from the base URL', async () => {
    server.enqueue(ndjsonFromEvents([{ text: 'ok' }]));
    await collectStream(
      adapter({ baseUrl: `${server.ollamaBaseUrl}/v1/` }).stream({
        messages: [
          { role: 'user', content: 'w?' },
          { role: 'assistant', content: null, toolCalls: [{ id: 'c1', name: 'get_weather', arguments: '{"city":"Tokyo"}' }] },
          { role: 'tool', content: 'sunny', toolCallId: 'c1', name: 'get_weather' },
        ],
        tools: [WEATHER],
        temperature: 0.7,
        maxTokens: 50,
      }),
    );
    const [req] = server.chatRequests;
    expect(req.path).toBe('/api/chat');
    expect(req.body).toEqual({
      model: 'llama3.2',
      stream: true,
      messages: [
        { role: 'user', content: 'w?' },
        { role: 'assistant', content: '', tool_calls: [{ function: { name: 'get_weather', arguments: { city: 'Tokyo' } } }] },
        { role: 'tool', content: 'sunny', tool_name: 'get_weather' },
      ],
      tools: [{ type: 'function', function: WEATHER }],
      options: { temperature: 0.7, num_predict: 50 },
    });
  });

  it("honours toolChoice 'none' by offering no tools (Ollama has no tool_choice)", async () => {
    server.enqueue(ndjsonFromEvents([{ text: 'final' }]));
    await collectStream(adapter().stream({ ...ASK, tools: [WEATHER], toolChoice: 'none' }));
    expect(server.chatRequests[0].body.tools).toBeUndefined();
  });

  it('sends think:false only to models that report the thinking capability', async () => {
    server.setShow(respond.json({ capabilities: ['completion', 'tools', 'thinking'] }));
    server.enqueue(ndjsonFromEvents([{ text: 'a' }]), ndjsonFromEvents([{ text: 'b' }]));
    const thinker = adapter();
    await collectStream(thinker.stream({ ...ASK, disableReasoning: true }));
    expect(server.chatRequests[0].body.think).toBe(false);

    server.setShow(respond.json({ capabilities: ['completion'] }));
    await collectStream(adapter().stream({ ...ASK, disableReasoning: true }));
    expect(server.chatRequests[1].body.think).toBeUndefined();
  });

  describe('capabilities()', () => {
    it('asks /api/show once per model and reads "tools"', async () => {
      server.setShow(respond.json({ capabilities: ['completion', 'tools'] }));
      const a = adapter({ toolCalling: false });
      await expect(a.capabilities()).resolves.toEqual({ provider: 'ollama', model: 'llama3.2', toolCalling: true, contextWindow: 8192, replay: false });
      await a.capabilities();
      const shows = server.requests.filter((r) => r.path === '/api/show');
      expect(shows).toHaveLength(1);
      expect(shows[0].body).toMatchObject({ model: 'llama3.2' });
    });

    it('reports the context window the model really has: num_ctx, else its context_length, never more than configured', async () => {
      server.setShow(respond.json({ capabilities: ['completion', 'tools'], model_info: { 'llama.context_length': 4096 } }));
      await expect(adapter().capabilities()).resolves.toMatchObject({ contextWindow: 4096 });
      server.setShow(respond.json({ capabilities: ['tools'], model_info: { 'qwen2.context_length': 131072 }, parameters: 'stop "<|im_end|>"\nnum_ctx 6144' }));
      await expect(adapter().capabilities()).resolves.toMatchObject({ contextWindow: 6144 });
      server.setShow(respond.json({ capabilities: ['tools'], model_info: { 'qwen2.context_length': 131072 } }));
      await expect(adapter().capabilities()).resolves.toMatchObject({ contextWindow: 8192 });
    });

    it('says no tools when the model lacks them', async () => {
      server.setShow(respond.json({ capabilities: ['completion'] }));
      await expect(adapter().capabilities()).resolves.toMatchObject({ toolCalling: false });
    });

    it('falls back to LLM_TOOL_CALLING when /api/show fails or is too old to say, and asks again later', async () => {
      server.setShow(respond.status(500));
      const a = adapter({ toolCalling: false });
      await expect(a.capabilities()).resolves.toMatchObject({ toolCalling: false });
      server.setShow(respond.json({ modelfile: '…' }));
      await expect(a.capabilities()).resolves.toMatchObject({ toolCalling: false });
      expect(server.requests.filter((r) => r.path === '/api/show')).toHaveLength(2);
    });
  });

  describe('failures', () => {
    it('retries 500 at most twice, never 404', async () => {
      server.enqueue(...times(3, respond.status(500)));
      const got = await collectStream(adapter().stream(ASK));
      expect(server.chatRequests).toHaveLength(3);
      expect(got.errors).toEqual([expect.objectContaining({ code: 'server_error' })]);

      server.reset();
      server.enqueue(respond.json({ error: "model 'nope' not found" }, 404));
      const missing = await collectStream(adapter().stream(ASK));
      expect(server.chatRequests).toHaveLength(1);
      expect(missing.errors).toEqual([expect.objectContaining({ code: 'bad_request', status: 404, message: expect.stringContaining('not found') })]);
    });

    it('reports a refused connection as network after its retries', async () => {
      const dead = await ReplayServer.start();
      const url = dead.ollamaBaseUrl;
      await dead.close();
      const got = await collectStream(adapter({ baseUrl: url }).stream(ASK));
      expect(got.errors).toEqual([expect.objectContaining({ code: 'network', retryable: true })]);
    });

    it('reports an error line mid-stream as provider_error', async () => {
      server.enqueue(respond.ndjson([{ model: 'm', message: { role: 'assistant', content: 'Hi' }, done: false }, { error: 'model runner crashed' }]));
      const got = await collectStream(adapter().stream(ASK));
      expect(got.text).toBe('Hi');
      expect(got.errors).toEqual([expect.objectContaining({ code: 'provider_error', message: expect.stringContaining('crashed') })]);
    });

    it('ends a stalled stream with idle_timeout and a cut one with invalid_response', async () => {
      server.enqueue(respond.recording('ollama-llama32-native-tool-call', { stallAfter: 1 }));
      const stalled = await collectStream(adapter({ idleTimeoutMs: 200 }).stream(ASK));
      expect(stalled.errors.map((e) => e.code)).toEqual(['idle_timeout']);

      server.enqueue(respond.ndjson([{ model: 'm', message: { role: 'assistant', content: 'Hi' }, done: false }]));
      const cut = await collectStream(adapter().stream(ASK));
      expect(cut.errors.map((e) => e.code)).toEqual(['invalid_response']);
      expect(cut.toolCalls).toEqual([]);
    });

    // a back-off that ignored the signal would sleep the 20 s Retry-After: this test's 5 s limit fails it
    it('aborts during back-off, without a retry', async () => {
      server.enqueue(respond.status(429, { retryAfter: '20' }));
      const got = await collectStream(adapter().stream(ASK, AbortSignal.timeout(100)));
      expect(got.errors.map((e) => e.code)).toEqual(['aborted']);
      expect(server.chatRequests).toHaveLength(1);
    }, 5_000);
  });

  describe('complete()', () => {
    it('uses stream:false and returns the merged answer', async () => {
      server.enqueue(respond.turn([{ text: 'Sunny.' }, { toolCall: { name: 'get_weather', args: { city: 'Tokyo' } } }]));
      const result = await adapter().complete({ ...ASK, tools: [WEATHER] });
      expect(server.chatRequests[0].body.stream).toBe(false);
      expect(result).toMatchObject({
        content: 'Sunny.',
        toolCalls: [{ name: 'get_weather', arguments: '{"city":"Tokyo"}' }],
        finishReason: 'tool_calls',
        rawFinishReason: 'stop',
      });
    });

    it('rejects with LlmError', async () => {
      server.enqueue(respond.status(400, { message: 'bad' }));
      await expect(adapter().complete(ASK)).rejects.toBeInstanceOf(LlmError);
    });
  });

  it('ends with a clear invalid_response error when a line passes LLM_MAX_LINE_LENGTH', async () => {
    server.enqueue(respond.ndjson([{ message: { role: 'assistant', content: 'ok ' }, done: false }, { message: { role: 'assistant', content: 'z'.repeat(5000) }, done: false }]));
    const got = await collectStream(adapter({ maxLineLength: 2048 }).stream(ASK));
    expect(got.text).toBe('ok ');
    expect(got.errors).toEqual([expect.objectContaining({ code: 'invalid_response', message: expect.stringMatching(/longer than 2048 characters \(LLM_MAX_LINE_LENGTH\)/) })]);
  });
});
