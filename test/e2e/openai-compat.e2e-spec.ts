import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import OpenAI from 'openai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { generateText, streamText } from 'ai';
import { startApp, type TestApp } from '../support/app';
import { ReplayServer, respond } from '../support/replay-server';
import { sse } from '../support/sse-client';
import { waitFor } from '../support/wait-for';
import { readmeExample } from '../support/readme-example';

/**
 * Issue 34 item 1: Orion as an OpenAI-compatible server, driven by clients nobody here wrote
 * (the `openai` package, the AI SDK's openai-compatible provider). Each gets the answer the
 * native route gives for the same scripted turn, in which Orion runs list_files itself.
 */
const ANSWER = 'The guides folder holds install.md and usage.md.';
/** the scripted model: one list_files call, then the answer */
const toolThenAnswer = () => [respond.turn([{ toolCall: { name: 'list_files', args: { path: 'guides' }, id: 'l1' } }]), respond.turn([{ text: 'The guides folder holds ' }, { text: 'install.md and usage.md.' }])];
const QUESTION = 'What is in the guides folder?';

type Message = { role: string; content: string; steps?: Array<{ type: string; name?: string; status?: string }> };

describe('OpenAI-compatible endpoint (/v1)', () => {
  let llm: ReplayServer;
  let t: TestApp;
  let openai: OpenAI;
  let native: string;

  beforeAll(async () => {
    llm = await ReplayServer.start();
    t = await startApp({ LLM_PROVIDER: 'openai', LLM_BASE_URL: llm.openAiBaseUrl, LLM_MODELS: 'model-a,model-b', TWO_STAGE_ENABLED: 'true' });
    mkdirSync(join(t.workspace, 'default', 'guides'), { recursive: true });
    writeFileSync(join(t.workspace, 'default', 'guides', 'install.md'), '# Install\n');
    writeFileSync(join(t.workspace, 'default', 'guides', 'usage.md'), '# Usage\n');
    openai = new OpenAI({ baseURL: `${t.url}/v1`, apiKey: 'unused-in-local-mode', maxRetries: 0 });
    // the answer the native route gives for the same turn
    llm.enqueue(...toolThenAnswer());
    const res = await sse(`${t.url}/api/chat/messages`, { body: { content: QUESTION }, timeoutMs: 30_000 });
    native = res.events.at(-1)!.data.fullContent as string;
  }, 120_000);
  afterAll(async () => {
    await t?.close();
    await llm?.close();
  });
  beforeEach(() => llm.reset());

  const messagesOf = async (conversationId: string) => (await (await fetch(`${t.url}/api/chat/conversations/${conversationId}/messages`)).json()) as Message[];
  const conversationCount = async () => ((await (await fetch(`${t.url}/api/chat/conversations`)).json()) as unknown[]).length;
  /** the model saw list_files' result: Orion ran the tool, not the client */
  const expectToolRunByOrion = () => {
    expect(llm.chatRequests).toHaveLength(2);
    const toolMessage = (llm.chatRequests[1].body as { messages: Array<{ role: string; content: string }> }).messages.find((m) => m.role === 'tool');
    expect(toolMessage?.content).toContain('install.md');
  };

  it('the native route answers the scripted turn', () => {
    expect(native).toBe(ANSWER);
  });

  it('openai: chat.completions.create without stream gets the same answer, and the turn is stored with its tool step', async () => {
    llm.enqueue(...toolThenAnswer());
    const completion = await openai.chat.completions.create({ model: 'orion-unified', messages: [{ role: 'user', content: QUESTION }] });
    expect(completion.object).toBe('chat.completion');
    expect(completion.choices[0].message.content).toBe(native);
    expect(completion.choices[0].finish_reason).toBe('stop');
    expect(completion.choices[0].message.tool_calls ?? []).toEqual([]);
    expect(completion.model).toBe('model-a');
    expect(completion.usage!.total_tokens).toBeGreaterThan(0);
    expectToolRunByOrion();
    const orion = (completion as unknown as { orion: { request_id: string; conversation_id: string; stop_reason: string } }).orion;
    expect(completion.id).toBe(`chatcmpl-${orion.request_id}`);
    expect(orion.stop_reason).toBe('final_answer');
    const stored = await messagesOf(orion.conversation_id);
    expect(stored.map((m) => [m.role, m.content])).toEqual([
      ['user', QUESTION],
      ['assistant', native],
    ]);
    expect(stored[1].steps!.filter((s) => s.type === 'tool').map((s) => [s.name, s.status])).toEqual([['list_files', 'completed']]);
    // the same run is traced as the chat routes trace it
    const trace = (await (await fetch(`${t.url}/api/trace?requestId=${orion.request_id}`)).json()) as Array<{ type: string }>;
    expect(trace.map((e) => e.type)).toEqual(expect.arrayContaining(['run_started', 'tool_call', 'run_completed']));
  });

  it('openai: streaming gets the role first, content deltas, one final chunk with finish_reason and usage, and no tool calls', async () => {
    llm.enqueue(...toolThenAnswer());
    const stream = await openai.chat.completions.create({ model: 'orion-unified', messages: [{ role: 'user', content: QUESTION }], stream: true, stream_options: { include_usage: true } });
    const chunks: OpenAI.Chat.Completions.ChatCompletionChunk[] = [];
    for await (const chunk of stream) chunks.push(chunk);
    expect(chunks[0].choices[0].delta.role).toBe('assistant');
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? '').join('')).toBe(native);
    expect(chunks.every((c) => !c.choices[0]?.delta.tool_calls)).toBe(true);
    const finished = chunks.filter((c) => c.choices[0]?.finish_reason);
    expect(finished).toHaveLength(1);
    expect(finished[0]).toBe(chunks.at(-1));
    expect(finished[0].choices[0].finish_reason).toBe('stop');
    expect(finished[0].usage).toMatchObject({ prompt_tokens: expect.any(Number), completion_tokens: expect.any(Number) });
    expect(finished[0].usage!.total_tokens).toBeGreaterThan(0);
    expect(new Set(chunks.map((c) => c.id)).size).toBe(1);
    expectToolRunByOrion();
  });

  it('AI SDK: generateText and streamText over @ai-sdk/openai-compatible get the same answer', async () => {
    const orion = createOpenAICompatible({ name: 'orion', baseURL: `${t.url}/v1`, includeUsage: true });
    llm.enqueue(...toolThenAnswer());
    const generated = await generateText({ model: orion('orion-unified'), prompt: QUESTION, maxRetries: 0 });
    expect(generated.text).toBe(native);
    expect(generated.finishReason).toBe('stop');
    expect(generated.toolCalls).toEqual([]);
    expectToolRunByOrion();

    llm.reset();
    llm.enqueue(...toolThenAnswer());
    const streamed = streamText({ model: orion('orion-unified'), prompt: QUESTION, maxRetries: 0 });
    let text = '';
    for await (const delta of streamed.textStream) text += delta;
    expect(text).toBe(native);
    expect(await streamed.finishReason).toBe('stop');
    expect((await streamed.usage).totalTokens).toBeGreaterThan(0);
    expectToolRunByOrion();
  });

  it('opt-in progress: X-Orion-Progress shows the tool step as readable text in delta.orion_progress', async () => {
    llm.enqueue(...toolThenAnswer());
    const stream = await openai.chat.completions.create({ model: 'orion-unified', messages: [{ role: 'user', content: QUESTION }], stream: true }, { headers: { 'X-Orion-Progress': 'true' } });
    const progress: string[] = [];
    let content = '';
    for await (const chunk of stream) {
      const delta = chunk.choices[0]?.delta as { content?: string; orion_progress?: string } | undefined;
      if (delta?.orion_progress) progress.push(delta.orion_progress);
      content += delta?.content ?? '';
    }
    expect(content).toBe(native);
    expect(progress).toEqual(['Running list_files {"path":"guides"}', expect.stringMatching(/^list_files completed in \d+ ms$/)]);
  });

  it('stateless: the request\'s messages are the history the model sees; system messages join the system prompt', async () => {
    llm.enqueue(respond.turn([{ text: 'Yes, two.' }]));
    const completion = await openai.chat.completions.create({
      model: 'model-b',
      messages: [
        { role: 'system', content: 'Answer in one short sentence.' },
        { role: 'user', content: 'Earlier question' },
        { role: 'assistant', content: 'Earlier answer' },
        { role: 'user', content: 'Two files?' },
      ],
    });
    expect(completion.choices[0].message.content).toBe('Yes, two.');
    const sent = llm.chatRequests[0].body as { model: string; messages: Array<{ role: string; content: string }> };
    expect(sent.model).toBe('model-b');
    expect(sent.messages[0].role).toBe('system');
    expect(sent.messages[0].content).toContain('Answer in one short sentence.');
    expect(sent.messages.slice(1).map((m) => [m.role, m.content])).toEqual([
      ['user', 'Earlier question'],
      ['assistant', 'Earlier answer'],
      ['user', 'Two files?'],
    ]);
  });

  it('a conversation named by X-Orion-Conversation brings its stored history; the last user message is the new one', async () => {
    llm.enqueue(respond.turn([{ text: 'First answer.' }]));
    const first = await openai.chat.completions.create({ model: 'orion-unified', messages: [{ role: 'user', content: 'First question' }] });
    const conversationId = (first as unknown as { orion: { conversation_id: string } }).orion.conversation_id;
    llm.reset();
    llm.enqueue(respond.turn([{ text: 'Second answer.' }]));
    const second = await openai.chat.completions.create(
      { model: 'orion-unified', messages: [{ role: 'user', content: 'ignored: the stored history is used' }, { role: 'user', content: 'Second question' }] },
      { headers: { 'X-Orion-Conversation': conversationId } },
    );
    expect(second.choices[0].message.content).toBe('Second answer.');
    const sent = (llm.chatRequests[0].body as { messages: Array<{ role: string; content: string }> }).messages.filter((m) => m.role !== 'system');
    expect(sent.map((m) => [m.role, m.content])).toEqual([
      ['user', 'First question'],
      ['assistant', 'First answer.'],
      ['user', 'Second question'],
    ]);
    expect((await messagesOf(conversationId)).map((m) => m.content)).toEqual(['First question', 'First answer.', 'Second question', 'Second answer.']);
  });

  it.each([
    ['docs/API.md', () => /<!-- openai-client-example:[^>]*-->\n```js\n([\s\S]*?)```/.exec(readFileSync(join(__dirname, '..', '..', 'docs', 'API.md'), 'utf8'))![1]],
    ['the README', () => readmeExample('openai')],
  ])('the client example of %s runs as it stands and prints the answer', async (_where, read) => {
    const example = read();
    expect(example.trim().split('\n')).toHaveLength(4);
    llm.enqueue(...toolThenAnswer());
    const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', example], { cwd: join(__dirname, '..', '..'), env: { ...process.env, ORION_URL: t.url }, timeout: 60_000 });
    expect(stdout.trim()).toBe(native);
    expectToolRunByOrion();
  });

  it('lists the allowed models and the aliases', async () => {
    const models = [];
    for await (const m of openai.models.list()) models.push(m.id);
    expect(models).toEqual(['model-a', 'model-b', 'orion-unified', 'orion-two-stage']);
    expect((await openai.models.retrieve('orion-two-stage')).owned_by).toBe('orion');
    await expect(openai.models.retrieve('gpt-4o')).rejects.toBeInstanceOf(OpenAI.NotFoundError);
  });

  it('orion-two-stage runs the turn on the two-stage protocol', async () => {
    llm.enqueue(respond.turn([{ text: 'Two-stage answer.' }]));
    const completion = await openai.chat.completions.create({ model: 'orion-two-stage', messages: [{ role: 'user', content: 'Hello' }] });
    expect(completion.choices[0].message.content).toBe('Two-stage answer.');
    const requestId = (completion as unknown as { orion: { request_id: string } }).orion.request_id;
    expect((await (await fetch(`${t.url}/api/chat/runs/${requestId}`)).json()).protocol).toBe('two-stage');
  });

  describe('errors: OpenAI-shaped 400s the openai package raises as BadRequestError, and nothing is stored', () => {
    const refused = async (call: () => Promise<unknown>) => {
      const before = await conversationCount();
      const err = await call().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(OpenAI.BadRequestError);
      expect(await conversationCount()).toBe(before);
      expect(llm.chatRequests).toHaveLength(0);
      return err as InstanceType<typeof OpenAI.BadRequestError>;
    };

    it('tools in the request', async () => {
      const err = await refused(() =>
        openai.chat.completions.create({ model: 'orion-unified', messages: [{ role: 'user', content: 'x' }], tools: [{ type: 'function', function: { name: 'mine', parameters: {} } }] }),
      );
      expect(err.error).toEqual({ message: expect.stringContaining('tools'), type: 'invalid_request_error', param: 'tools', code: 'unsupported_parameter' });
    });

    it('tool_choice, n > 1, logprobs', async () => {
      expect((await refused(() => openai.chat.completions.create({ model: 'orion-unified', messages: [{ role: 'user', content: 'x' }], tool_choice: 'auto' }))).param).toBe('tool_choice');
      expect((await refused(() => openai.chat.completions.create({ model: 'orion-unified', messages: [{ role: 'user', content: 'x' }], n: 2 }))).param).toBe('n');
      expect((await refused(() => openai.chat.completions.create({ model: 'orion-unified', messages: [{ role: 'user', content: 'x' }], logprobs: true }))).param).toBe('logprobs');
    });

    it('an unknown model', async () => {
      const err = await refused(() => openai.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'x' }] }));
      expect(err.code).toBe('model_not_found');
      expect(err.param).toBe('model');
      expect(err.message).toContain('orion-unified');
    });

    it('bad JSON', async () => {
      // the openai package always sends valid JSON: its fetch is given a broken body instead
      const broken = new OpenAI({ baseURL: `${t.url}/v1`, apiKey: 'x', maxRetries: 0, fetch: (url, init) => fetch(url, { ...init, body: '{"model": "orion-unified", "messages": [' }) });
      const err = await refused(() => broken.chat.completions.create({ model: 'orion-unified', messages: [{ role: 'user', content: 'x' }] }));
      expect(err.error).toMatchObject({ type: 'invalid_request_error', code: 'invalid_json', param: null });
    });

    it('a body of null, a missing model: the message says what is wrong', async () => {
      const post = (body: string) => fetch(`${t.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
      const nullBody = await post('null');
      expect(nullBody.status).toBe(400);
      expect((await nullBody.json()).error).toMatchObject({ message: 'The request body must be a JSON object', code: 'invalid_body' });
      const noModel = await post(JSON.stringify({ messages: [{ role: 'user', content: 'x' }] }));
      expect(noModel.status).toBe(400);
      expect((await noModel.json()).error).toMatchObject({ message: 'model is required', param: 'model' });
    });

    it('a tool message in the history, an unknown parameter', async () => {
      const err = await refused(() =>
        openai.chat.completions.create({ model: 'orion-unified', messages: [{ role: 'user', content: 'x' }, { role: 'tool', content: 'r', tool_call_id: 'c' }, { role: 'user', content: 'y' }] }),
      );
      expect(err.param).toBe('messages[1].role');
      const unknown = await refused(() => openai.chat.completions.create({ model: 'orion-unified', messages: [{ role: 'user', content: 'x' }], frobnicate: 1 } as never));
      expect(unknown.code).toBe('unknown_parameter');
    });
  });

  it('other errors keep OpenAI\'s shape: an unknown conversation (404), an unknown /v1 route (404)', async () => {
    const err = await openai.chat.completions.create({ model: 'orion-unified', messages: [{ role: 'user', content: 'x' }] }, { headers: { 'X-Orion-Conversation': '00000000-0000-4000-8000-000000000000' } }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.NotFoundError);
    expect((err as InstanceType<typeof OpenAI.NotFoundError>).code).toBe('conversation_not_found');
    const res = await fetch(`${t.url}/v1/embeddings`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ error: { message: expect.stringContaining('/v1/embeddings'), type: 'not_found_error', param: null, code: 'unknown_url' } });
  });

  it('a turn the model provider fails is an error the openai package raises: a 502 without stream, an error message in the stream', async () => {
    llm.enqueue(respond.status(400, { message: 'the provider refused' }));
    const plain = await openai.chat.completions.create({ model: 'orion-unified', messages: [{ role: 'user', content: 'Fail please' }] }).catch((e: unknown) => e);
    expect(plain).toBeInstanceOf(OpenAI.InternalServerError);
    expect((plain as InstanceType<typeof OpenAI.APIError>).status).toBe(502);
    expect((plain as InstanceType<typeof OpenAI.APIError>).code).toBe('llm_bad_request');

    llm.enqueue(respond.status(400, { message: 'the provider refused' }));
    const stream = await openai.chat.completions.create({ model: 'orion-unified', messages: [{ role: 'user', content: 'Fail please' }], stream: true });
    const failure = await (async () => {
      for await (const chunk of stream) void chunk;
    })().catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(OpenAI.APIError);
    expect((failure as InstanceType<typeof OpenAI.APIError>).code).toBe('llm_bad_request');
  });

  it('a client that disconnects mid-stream cancels the run', async () => {
    // the model answers one word, then stalls: only the client leaving can end this turn
    llm.enqueue(respond.turn([{ text: 'one ' }, { text: 'two ' }, { text: 'three' }], { faults: { stallAfter: 2 } }));
    const stream = await openai.chat.completions.create({ model: 'orion-unified', messages: [{ role: 'user', content: 'Count' }], stream: true });
    let id = '';
    for await (const chunk of stream) {
      id = chunk.id;
      // leaving the loop closes the connection (the SDK aborts its request)
      if (chunk.choices[0]?.delta.content) break;
    }
    const requestId = id.replace(/^chatcmpl-/, '');
    const run = await waitFor(
      async () => {
        const r = (await (await fetch(`${t.url}/api/chat/runs/${requestId}`)).json()) as { status: string };
        return r.status === 'running' ? undefined : r;
      },
      { what: 'the run to end after the client left', timeoutMs: 10_000 },
    );
    expect(run.status).toBe('cancelled');
  });

  it('a client that disconnects before a stream: false answer cancels the run', async () => {
    llm.enqueue(respond.turn([{ text: 'one ' }, { text: 'two' }], { faults: { stallAfter: 1 } }));
    const abort = new AbortController();
    const pending = openai.chat.completions.create({ model: 'orion-unified', messages: [{ role: 'user', content: 'Count without stream' }] }, { signal: abort.signal }).catch((e: unknown) => e);
    // the model has been asked: the turn is running
    await waitFor(() => llm.chatRequests.length === 1, { what: 'the model request' });
    abort.abort();
    expect(await pending).toBeInstanceOf(OpenAI.APIUserAbortError);
    const runs = await waitFor(
      async () => {
        const conversations = (await (await fetch(`${t.url}/api/chat/conversations`)).json()) as Array<{ id: string; title: string }>;
        const conv = conversations.find((c) => c.title.startsWith('Count without stream'));
        const msgs = conv ? await messagesOf(conv.id) : [];
        return msgs.find((m) => m.role === 'assistant') as (Message & { status: string }) | undefined;
      },
      { what: 'the cancelled answer to be stored', timeoutMs: 10_000 },
    );
    expect(runs.status).toBe('cancelled');
  });
});

describe('OpenAI-compatible endpoint: a call that waits for approval', () => {
  let llm: ReplayServer;
  let t: TestApp;
  let openai: OpenAI;

  beforeAll(async () => {
    llm = await ReplayServer.start();
    t = await startApp({ LLM_PROVIDER: 'openai', LLM_BASE_URL: llm.openAiBaseUrl, LLM_MODEL: 'model-a', TOOLS_REQUIRE_APPROVAL: 'list_files' });
    mkdirSync(join(t.workspace, 'default', 'guides'), { recursive: true });
    writeFileSync(join(t.workspace, 'default', 'guides', 'install.md'), '# Install\n');
    openai = new OpenAI({ baseURL: `${t.url}/v1`, apiKey: 'unused-in-local-mode', maxRetries: 0 });
  }, 120_000);
  afterAll(async () => {
    await t?.close();
    await llm?.close();
  });
  beforeEach(() => llm.reset());

  const APPROVAL_LINE = /^list_files waits for approval \(approvalId ([0-9a-f-]+)\): POST \/api\/chat\/runs\/([0-9a-f-]+)\/approvals\/\1 \{"decision":"approve"\} or \{"decision":"deny"\}$/;

  it('with X-Orion-Progress the wait is a progress line naming the approval route; deciding there lets the turn go on', async () => {
    llm.enqueue(respond.turn([{ toolCall: { name: 'list_files', args: { path: 'guides' }, id: 'l1' } }]), respond.turn([{ text: 'Approved: install.md.' }]));
    const stream = await openai.chat.completions.create({ model: 'orion-unified', messages: [{ role: 'user', content: QUESTION }], stream: true }, { headers: { 'X-Orion-Progress': 'true' } });
    const progress: string[] = [];
    let content = '';
    for await (const chunk of stream) {
      const delta = chunk.choices[0]?.delta as { content?: string; orion_progress?: string } | undefined;
      content += delta?.content ?? '';
      if (!delta?.orion_progress) continue;
      progress.push(delta.orion_progress);
      const waiting = APPROVAL_LINE.exec(delta.orion_progress);
      if (waiting) {
        const decided = await fetch(`${t.url}/api/chat/runs/${waiting[2]}/approvals/${waiting[1]}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ decision: 'approve' }) });
        expect(decided.status).toBe(200);
      }
    }
    expect(content).toBe('Approved: install.md.');
    // the call is announced, waits, is approved, then runs
    const approvalId = APPROVAL_LINE.exec(progress[1])?.[1];
    expect(progress).toEqual(['Running list_files {"path":"guides"}', expect.stringMatching(APPROVAL_LINE), `Approval ${approvalId} approved`, expect.stringMatching(/^list_files completed in \d+ ms$/)]);
  });

  it('a client that disconnects while the call waits does not cancel the run: a decision on the approval route lets it finish without a client', async () => {
    llm.enqueue(respond.turn([{ toolCall: { name: 'list_files', args: { path: 'guides' }, id: 'l2' } }]), respond.turn([{ text: 'Declined, so I did not look.' }]));
    const abort = new AbortController();
    const stream = await openai.chat.completions.create({ model: 'orion-unified', messages: [{ role: 'user', content: QUESTION }], stream: true }, { headers: { 'X-Orion-Progress': 'true' }, signal: abort.signal });
    let waiting: RegExpExecArray | null = null;
    await (async () => {
      for await (const chunk of stream) {
        const line = (chunk.choices[0]?.delta as { orion_progress?: string } | undefined)?.orion_progress;
        waiting = line ? APPROVAL_LINE.exec(line) : null;
        if (waiting) abort.abort();
      }
    })().catch(() => undefined);
    const [, approvalId, requestId] = waiting ?? [];
    expect(requestId).toBeTruthy();
    // the service has seen the client go
    await waitFor(async () => /orion_open_streams(?:\{[^}]*\})? 0\b/.test(await (await fetch(`${t.url}/metrics`)).text()), { what: 'the stream to close' });
    expect(await (await fetch(`${t.url}/api/chat/runs/${requestId}`)).json()).toMatchObject({ status: 'awaiting_approval' });
    const decided = await fetch(`${t.url}/api/chat/runs/${requestId}/approvals/${approvalId}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ decision: 'deny' }) });
    expect(decided.status).toBe(200);
    const run = await waitFor(async () => {
      const r = (await (await fetch(`${t.url}/api/chat/runs/${requestId}`)).json()) as { status: string };
      return r.status === 'completed' ? r : null;
    }, { what: 'the run to finish without its client', timeoutMs: 30_000 });
    expect(run.status).toBe('completed');
    expect(llm.chatRequests).toHaveLength(2);
  });
});

describe('OpenAI-compatible endpoint: keys, projects, limits', () => {
  const ADMIN = 'admin-key-for-openai-tests-0123456789';
  let llm: ReplayServer;
  let t: TestApp;

  beforeAll(async () => {
    llm = await ReplayServer.start();
    t = await startApp({ LLM_PROVIDER: 'openai', LLM_BASE_URL: llm.openAiBaseUrl, LLM_MODEL: 'model-a', API_KEYS: ADMIN, MAX_CONCURRENT_TURNS: '1' });
    mkdirSync(join(t.workspace, 'shop'), { recursive: true });
  }, 120_000);
  afterAll(async () => {
    await t?.close();
    await llm?.close();
  });
  beforeEach(() => llm.reset());

  const client = (apiKey: string, headers: Record<string, string> = {}) => new OpenAI({ baseURL: `${t.url}/v1`, apiKey, maxRetries: 0, defaultHeaders: headers });

  it('Authorization: Bearer works with an API_KEYS key and a database key; a wrong key is an AuthenticationError', async () => {
    llm.enqueue(respond.turn([{ text: 'Hello from Orion.' }]));
    const answer = await client(ADMIN).chat.completions.create({ model: 'orion-unified', messages: [{ role: 'user', content: 'Hi' }] });
    expect(answer.choices[0].message.content).toBe('Hello from Orion.');

    const created = await fetch(`${t.url}/api/admin/keys`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${ADMIN}` }, body: JSON.stringify({ name: 'shop-user', projects: ['shop'], role: 'user' }) });
    const { key } = (await created.json()) as { key: string };
    llm.enqueue(respond.turn([{ text: 'Hello, shop.' }]));
    const shop = await client(key, { 'X-Orion-Project': 'shop' }).chat.completions.create({ model: 'orion-unified', messages: [{ role: 'user', content: 'Hi shop' }] });
    expect(shop.choices[0].message.content).toBe('Hello, shop.');
    const conversationId = (shop as unknown as { orion: { conversation_id: string } }).orion.conversation_id;
    const conversations = (await (await fetch(`${t.url}/api/chat/conversations?projectId=shop`, { headers: { authorization: `Bearer ${key}` } })).json()) as Array<{ id: string }>;
    expect(conversations.map((c) => c.id)).toContain(conversationId);

    // the key reaches only its project: the default project is a 404, as on the chat routes
    const other = await client(key).chat.completions.create({ model: 'orion-unified', messages: [{ role: 'user', content: 'Hi default' }] }).catch((e: unknown) => e);
    expect(other).toBeInstanceOf(OpenAI.NotFoundError);
    const wrong = await client('not-a-key').chat.completions.create({ model: 'orion-unified', messages: [{ role: 'user', content: 'Hi' }] }).catch((e: unknown) => e);
    expect(wrong).toBeInstanceOf(OpenAI.AuthenticationError);
    expect((wrong as InstanceType<typeof OpenAI.AuthenticationError>).error).toMatchObject({ type: 'authentication_error' });
    const models = await client('not-a-key').models.list().catch((e: unknown) => e);
    expect(models).toBeInstanceOf(OpenAI.AuthenticationError);
    expect(llm.chatRequests).toHaveLength(2);
  });

  it('a turn over MAX_CONCURRENT_TURNS is an OpenAI-shaped 429 (RateLimitError) before any stream opens', async () => {
    llm.enqueue(respond.turn([{ text: 'slow ' }, { text: 'answer' }], { faults: { stallAfter: 1 } }));
    const abort = new AbortController();
    const first = await client(ADMIN).chat.completions.create({ model: 'orion-unified', messages: [{ role: 'user', content: 'Long one' }], stream: true }, { signal: abort.signal });
    const iterator = first[Symbol.asyncIterator]();
    await iterator.next();
    const second = await client(ADMIN).chat.completions.create({ model: 'orion-unified', messages: [{ role: 'user', content: 'Another' }] }).catch((e: unknown) => e);
    expect(second).toBeInstanceOf(OpenAI.RateLimitError);
    expect((second as InstanceType<typeof OpenAI.RateLimitError>).error).toMatchObject({ type: 'rate_limit_error', code: 'too_many_requests' });
    expect((second as InstanceType<typeof OpenAI.RateLimitError>).headers?.get('retry-after')).toBeTruthy();
    abort.abort();
    await iterator.next().catch(() => undefined);
  });
});
