import { Logger } from '@nestjs/common';
import { collectStream } from '../../../test/support/llm-stream-collector';
import { ReplayServer, respond, sseFromEvents, times } from '../../../test/support/replay-server';
import { waitFor } from '../../../test/support/wait-for';
import { LlmError, type LlmRequest } from '../llm-adapter.port';
import type { HttpAdapterOptions } from './http-adapter.options';
import { OpenAiCompatibleAdapter } from './openai-compatible.adapter';

const API_KEY = 'sk-test-0123456789abcdefSECRET';
const ASK: LlmRequest = { messages: [{ role: 'user', content: 'What is in the project?' }] };
const LIST_FILES = { name: 'list_files', description: 'Lists files', parameters: { type: 'object', properties: { path: { type: 'string' } } } };

describe('OpenAiCompatibleAdapter', () => {
  let server: ReplayServer;

  beforeAll(async () => {
    Logger.overrideLogger(false); // retries log warnings; the assertions say what matters
    server = await ReplayServer.start();
  });
  afterEach(() => server.reset());
  afterAll(() => server.close());

  /** Short back-off so retry tests stay fast; Retry-After is still honoured as sent. */
  const adapter = (over: Partial<HttpAdapterOptions> = {}) =>
    new OpenAiCompatibleAdapter({
      baseUrl: server.openAiBaseUrl,
      model: 'gpt-test',
      apiKey: API_KEY,
      timeoutMs: 10_000,
      idleTimeoutMs: 5_000,
      contextWindow: 8192,
      retry: { baseDelayMs: 5, maxDelayMs: 20 },
      ...over,
    });

  describe('request', () => {
    it('sends the OpenAI wire format: snake_case messages, tools, stream_options, the key as a bearer token', async () => {
      server.enqueue(sseFromEvents([{ text: 'ok' }]));
      await collectStream(
        adapter().stream({
          messages: [
            { role: 'system', content: 'be brief' },
            { role: 'user', content: 'list' },
            { role: 'assistant', content: null, toolCalls: [{ id: 'call_1', name: 'list_files', arguments: '{"path":"."}' }] },
            { role: 'tool', content: 'a.md', toolCallId: 'call_1', name: 'list_files' },
          ],
          tools: [LIST_FILES],
          temperature: 0.3,
          maxTokens: 100,
          requestId: 'req-42',
        }),
      );
      const [req] = server.chatRequests;
      expect(req.path).toBe('/v1/chat/completions');
      expect(req.headers.authorization).toBe(`Bearer ${API_KEY}`);
      expect(req.headers['x-client-request-id']).toBe('req-42');
      expect(req.body).toMatchObject({
        model: 'gpt-test',
        stream: true,
        stream_options: { include_usage: true },
        temperature: 0.3,
        max_tokens: 100,
        messages: [
          { role: 'system', content: 'be brief' },
          { role: 'user', content: 'list' },
          { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'list_files', arguments: '{"path":"."}' } }] },
          { role: 'tool', tool_call_id: 'call_1', content: 'a.md' },
        ],
        tools: [{ type: 'function', function: LIST_FILES }],
      });
      expect(req.body.tool_choice).toBeUndefined();
    });

    it("sends tool_choice none with the tools when toolChoice is 'none', and no reasoning switch", async () => {
      server.enqueue(sseFromEvents([{ text: 'final' }]));
      await collectStream(adapter().stream({ ...ASK, tools: [LIST_FILES], toolChoice: 'none', disableReasoning: true }));
      const body = server.chatRequests[0].body;
      expect(body.tool_choice).toBe('none');
      expect(body.tools).toHaveLength(1);
      expect(Object.keys(body).sort()).toEqual(['messages', 'model', 'stream', 'stream_options', 'tool_choice', 'tools']);
    });

    it('sends no Authorization header when no key is configured (local servers)', async () => {
      server.enqueue(sseFromEvents([{ text: 'ok' }]));
      await collectStream(adapter({ apiKey: undefined }).stream(ASK));
      expect(server.chatRequests[0].headers.authorization).toBeUndefined();
    });
  });

  describe('stream', () => {
    it('reads a scripted turn: text, tool call fragments, one finish with usage', async () => {
      server.enqueue(
        sseFromEvents([{ reasoning: 'think' }, { text: 'Let me look. ' }, { toolCall: { name: 'list_files', args: { path: '.' } } }], { argumentFragmentSize: 3 }),
      );
      const got = await collectStream(adapter().stream({ ...ASK, tools: [LIST_FILES] }));
      expect(got.reasoning).toBe('think');
      expect(got.text).toBe('Let me look. ');
      expect(got.toolCalls).toEqual([{ id: 'call_scripted_0', name: 'list_files', args: { path: '.' } }]);
      expect(got.finishes).toHaveLength(1);
      expect(got.finishes[0].reason).toBe('tool_calls');
    });

    it('skips SSE comments and reports a stream cut without finish or [DONE] as invalid_response', async () => {
      server.enqueue(respond.sse([{ comment: 'keep-alive' }, { choices: [{ index: 0, delta: { content: 'Hel' } }] }]));
      const got = await collectStream(adapter().stream(ASK));
      expect(got.text).toBe('Hel');
      expect(got.errors.map((e) => e.code)).toEqual(['invalid_response']);
    });
  });

  describe('odd servers', () => {
    it('reads a JSON answer to a stream request (stream flag ignored)', async () => {
      server.enqueue(respond.handler((_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ choices: [{ index: 0, message: { role: 'assistant', content: 'whole' }, finish_reason: 'stop' }], usage: { prompt_tokens: 3, completion_tokens: 1 } }));
      }));
      const got = await collectStream(adapter().stream(ASK));
      expect(got.text).toBe('whole');
      expect(got.finishes).toEqual([{ reason: 'stop', rawReason: 'stop', usage: { promptTokens: 3, completionTokens: 1, totalTokens: 4 } }]);
    });

    it('splits chunks sent without blank lines between them', async () => {
      const chunk = (content: string) => JSON.stringify({ choices: [{ index: 0, delta: { content } }] });
      server.enqueue(respond.sse([{ data: `${chunk('a')}\n${chunk('b')}` }, { data: `${chunk('c')}\n[DONE]` }]));
      const got = await collectStream(adapter().stream(ASK));
      expect(got.text).toBe('abc');
      expect(got.finishes.map((f) => f.reason)).toEqual(['stop']);
    });

    it('hands on the text deltas of one network chunk as one delta, and deltas that come apart one by one', async () => {
      const delta = (content: string) => ({ choices: [{ index: 0, delta: { content } }] });
      server.enqueue(respond.recording('deepseek-reasoner-text-2025-05')); // 810 chunks, sent at once
      const together = await collectStream(adapter().stream(ASK));
      const deltas = together.events.filter((e) => e.type === 'text-delta' || e.type === 'reasoning-delta');
      expect(deltas.length).toBeLessThan(20);
      expect(together.text.length).toBeGreaterThan(100);
      server.enqueue(respond.sse([delta('a'), delta('b'), { choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] }, '[DONE]'], { delayMs: 30 }));
      const apart = await collectStream(adapter().stream(ASK));
      expect(apart.events.filter((e) => e.type === 'text-delta')).toEqual([
        { type: 'text-delta', text: 'a' },
        { type: 'text-delta', text: 'b' },
      ]);
    });

    it('drops what a choice sends after its finish_reason (a tool call after stop), and counts it on the finish', async () => {
      const chunk = (delta: Record<string, unknown>, finish: string | null = null) => ({ choices: [{ index: 0, delta, finish_reason: finish }] });
      server.enqueue(
        respond.sse([
          chunk({ content: 'Done.' }),
          chunk({}, 'stop'),
          chunk({ tool_calls: [{ index: 0, id: 'call_late', type: 'function', function: { name: 'list_files', arguments: '' } }] }),
          chunk({ tool_calls: [{ index: 0, function: { arguments: '{"path":"."}' } }] }),
          chunk({ content: ' And more.', reasoning_content: 'hm' }, 'tool_calls'),
          chunk({ content: '' }), // an empty delta after the finish carries nothing: not counted
          { choices: [], usage: { prompt_tokens: 5, completion_tokens: 3 } },
          '[DONE]',
        ]),
      );
      const got = await collectStream(adapter().stream({ ...ASK, tools: [LIST_FILES] }));
      expect(got.text).toBe('Done.');
      expect(got.reasoning).toBe('');
      expect(got.events.some((e) => e.type === 'tool-call-delta')).toBe(false);
      expect(got.toolCalls).toEqual([]);
      const finish = got.events.find((e) => e.type === 'finish');
      // the first finish_reason stands, and the late tool call does not turn it into tool_calls
      expect(finish).toEqual({ type: 'finish', reason: 'stop', rawReason: 'stop', usage: { promptTokens: 5, completionTokens: 3, totalTokens: 8 }, ignoredAfterFinish: { text: 1, reasoning: 1, toolCalls: 2 } });
    });

    it('keeps the deltas of the finish chunk itself (vLLM closes a call in its finish chunk)', async () => {
      server.enqueue(
        respond.sse([
          { choices: [{ index: 0, delta: { tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'list_files', arguments: '{"path":' } }] }, finish_reason: null }] },
          { choices: [{ index: 0, delta: { content: 'ok', tool_calls: [{ index: 0, function: { arguments: '"."}' } }] }, finish_reason: 'tool_calls' }] },
          '[DONE]',
        ]),
      );
      const got = await collectStream(adapter().stream({ ...ASK, tools: [LIST_FILES] }));
      expect(got.text).toBe('ok');
      expect(got.toolCalls).toEqual([{ id: 'call_1', name: 'list_files', args: { path: '.' } }]);
      expect(got.events.find((e) => e.type === 'finish')).not.toHaveProperty('ignoredAfterFinish');
    });
  });

  describe('a scripted multi-turn model over HTTP', () => {
    it('plays queued turns in order: a tool call, then the answer', async () => {
      server.enqueue(
        respond.turn([{ toolCall: { name: 'list_files', args: { path: '.' }, id: 'call_1' } }]),
        respond.turn([{ text: 'The project has a README.' }]),
      );
      const llm = adapter();
      const first = await collectStream(llm.stream({ ...ASK, tools: [LIST_FILES] }));
      expect(first.toolCalls).toEqual([{ id: 'call_1', name: 'list_files', args: { path: '.' } }]);
      const second = await collectStream(
        llm.stream({
          messages: [
            ...ASK.messages,
            { role: 'assistant', content: null, toolCalls: [{ id: 'call_1', name: 'list_files', arguments: '{"path":"."}' }] },
            { role: 'tool', content: 'README.md', toolCallId: 'call_1' },
          ],
          tools: [LIST_FILES],
        }),
      );
      expect(second.text).toBe('The project has a README.');
      expect(server.chatRequests[1].body.messages[2]).toEqual({ role: 'tool', tool_call_id: 'call_1', content: 'README.md' });
      expect(server.pending).toBe(0);
    });
  });

  describe('retries before the first byte', () => {
    it('honours Retry-After on 429, then succeeds', async () => {
      server.enqueue(respond.status(429, { retryAfter: '1' }), respond.recording('openai-gpt4o-text-stop-usage'));
      const got = await collectStream(adapter().stream(ASK));
      expect(got.errors).toEqual([]);
      expect(got.text).toContain('weather');
      const [first, second] = server.chatRequests;
      expect(server.chatRequests).toHaveLength(2);
      expect(second.receivedAt - first.receivedAt).toBeGreaterThanOrEqual(950);
    });

    it('retries 500 at most twice (3 requests), then ends with server_error', async () => {
      server.enqueue(...times(3, respond.status(500)), sseFromEvents([{ text: 'never reached' }]));
      const got = await collectStream(adapter().stream(ASK));
      expect(server.chatRequests).toHaveLength(3);
      expect(got.errors).toEqual([expect.objectContaining({ code: 'server_error', status: 500, retryable: true })]);
      expect(got.last).toBe('error');
    });

    it('retries a connection reset before any answer', async () => {
      server.enqueue(respond.reset(), sseFromEvents([{ text: 'after reset' }]));
      const got = await collectStream(adapter().stream(ASK));
      expect(server.chatRequests).toHaveLength(2);
      expect(got.text).toBe('after reset');
    });

    it.each([
      [400, 'bad_request'],
      [401, 'auth'],
      [403, 'auth'],
      [404, 'bad_request'],
    ] as const)('never retries %i (%s), and never shows the API key', async (status, code) => {
      server.enqueue(respond.status(status, { message: `Incorrect API key provided: ${API_KEY}` }), sseFromEvents([{ text: 'no' }]));
      const got = await collectStream(adapter().stream(ASK));
      expect(server.chatRequests).toHaveLength(1);
      expect(got.errors).toEqual([expect.objectContaining({ code, status, retryable: false })]);
      expect(got.errors[0].message).not.toContain(API_KEY);
      expect(got.errors[0].message).not.toContain('SECRET');
    });

    it('reports a refused connection as network after its retries', async () => {
      const dead = await ReplayServer.start();
      const url = dead.openAiBaseUrl;
      await dead.close();
      const got = await collectStream(adapter({ baseUrl: url }).stream(ASK));
      expect(got.errors).toEqual([expect.objectContaining({ code: 'network' })]);
    });
  });

  describe('after the first byte', () => {
    it.each([1, 3])('reports a reset after %i chunk(s) as an error, without retrying', async (chunks) => {
      server.enqueue(respond.recording('openai-gpt4o-text-stop-usage', { resetAfter: chunks }), respond.recording('openai-gpt4o-text-stop-usage'));
      const got = await collectStream(adapter().stream(ASK));
      expect(server.chatRequests).toHaveLength(1);
      // the first recorded chunk is the role chunk (content ""), the next ones carry text
      expect(got.text).toBe(chunks === 1 ? '' : "I'm unable");
      expect(got.errors).toEqual([expect.objectContaining({ code: 'network' })]);
      expect(got.finishes).toEqual([]);
    });

    it('ends a stalled stream with idle_timeout', async () => {
      server.enqueue(respond.recording('openai-gpt4o-text-stop-usage', { stallAfter: 3 }));
      const got = await collectStream(adapter({ idleTimeoutMs: 200 }).stream(ASK));
      expect(got.errors).toEqual([expect.objectContaining({ code: 'idle_timeout' })]);
      expect(server.chatRequests).toHaveLength(1);
    });

    it('ends a request that never answers with timeout', async () => {
      server.enqueue(respond.hang());
      const got = await collectStream(adapter({ timeoutMs: 300 }).stream(ASK));
      expect(got.errors).toEqual([expect.objectContaining({ code: 'timeout' })]);
    });
  });

  describe('abort', () => {
    // a back-off that ignored the signal would sleep the 20 s Retry-After: this test's 5 s limit fails it
    it('ends during a Retry-After back-off when aborted, without the retry', async () => {
      server.enqueue(respond.status(429, { retryAfter: '20' }), sseFromEvents([{ text: 'late' }]));
      const controller = new AbortController();
      setTimeout(() => controller.abort(), 100);
      const got = await collectStream(adapter().stream(ASK, controller.signal));
      expect(got.errors).toEqual([expect.objectContaining({ code: 'aborted' })]);
      expect(server.chatRequests).toHaveLength(1);
    }, 5_000);

    it('aborts the HTTP request mid-stream and ends with aborted', async () => {
      server.enqueue(respond.recording('openai-gpt4o-text-stop-usage', { delayMs: 30 }));
      const controller = new AbortController();
      let deltas = 0;
      const got = await collectStream(adapter().stream(ASK, controller.signal), (e) => {
        if (e.type === 'text-delta' && deltas++ === 0) controller.abort();
      });
      // nothing of the recording after the abort was read, and the server saw its request cut
      expect(deltas).toBe(1);
      await waitFor(() => server.chatRequests[0].closedEarlyAt !== undefined, { what: 'the model request to close' });
      expect(got.last).toBe('error');
      expect(got.errors).toEqual([expect.objectContaining({ code: 'aborted' })]);
    });

    it('stops between the messages of one network chunk once aborted', async () => {
      server.enqueue(respond.recording('deepseek-reasoner-text-2025-05')); // 810 chunks, sent at once
      const controller = new AbortController();
      const got = await collectStream(adapter().stream(ASK, controller.signal), (_e, i) => {
        if (i === 0) controller.abort();
      });
      expect(got.events.length).toBeLessThan(5);
      expect(got.errors.map((e) => e.code)).toEqual(['aborted']);
    });

    it('does not even send a request for an already aborted signal', async () => {
      const got = await collectStream(adapter().stream(ASK, AbortSignal.abort()));
      expect(got.errors.map((e) => e.code)).toEqual(['aborted']);
      expect(server.chatRequests).toHaveLength(0);
    });
  });

  describe('complete()', () => {
    it('returns the merged non-streaming answer', async () => {
      server.enqueue(respond.turn([{ text: 'Checking.' }, { toolCall: { name: 'list_files', args: { path: 'docs' }, id: 'c9' } }]));
      const result = await adapter().complete({ ...ASK, tools: [LIST_FILES] });
      expect(server.chatRequests[0].body.stream).toBeUndefined();
      expect(result).toMatchObject({
        content: 'Checking.',
        toolCalls: [{ id: 'c9', name: 'list_files', arguments: '{"path":"docs"}' }],
        finishReason: 'tool_calls',
        usage: { promptTokens: 12 },
      });
    });

    it('retries before the first byte like stream()', async () => {
      server.enqueue(respond.status(503), respond.turn([{ text: 'ok' }]));
      await expect(adapter().complete(ASK)).resolves.toMatchObject({ content: 'ok', finishReason: 'stop' });
      expect(server.chatRequests).toHaveLength(2);
    });

    it('rejects with LlmError, without the key', async () => {
      server.enqueue(respond.status(401, { message: `bad key ${API_KEY}` }));
      const err = await adapter().complete(ASK).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(LlmError);
      expect((err as LlmError).info).toMatchObject({ code: 'auth', status: 401 });
      expect((err as LlmError).message).not.toContain(API_KEY);
    });
  });

  it('reports capabilities from configuration', async () => {
    await expect(adapter({ toolCalling: false }).capabilities()).resolves.toEqual({
      provider: 'openai',
      model: 'gpt-test',
      toolCalling: false,
      contextWindow: 8192,
      replay: false,
    });
  });

  it('ends with a clear invalid_response error when an SSE line passes LLM_MAX_LINE_LENGTH', async () => {
    const chunk = (content: string) => ({ id: 'c', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content } }] });
    server.enqueue(respond.sse([chunk('ok '), chunk('z'.repeat(5000))]));
    const got = await collectStream(adapter({ maxLineLength: 2048 }).stream(ASK));
    expect(got.text).toBe('ok ');
    expect(got.errors).toEqual([expect.objectContaining({ code: 'invalid_response', message: expect.stringMatching(/longer than 2048 characters \(LLM_MAX_LINE_LENGTH\)/) })]);
  });
});
