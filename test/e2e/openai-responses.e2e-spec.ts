import { execFile } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { join } from 'node:path';
import OpenAI from 'openai';
import type { Response as OpenAiResponse, ResponseStreamEvent } from 'openai/resources/responses/responses';
import { startApp, startPeer, type TestApp } from '../support/app';
import { itOnPostgres } from '../support/db';
import { ReplayServer, respond } from '../support/replay-server';
import { readmeExample } from '../support/readme-example';
import { waitFor } from '../support/wait-for';

/**
 * Issue 47 item 1: OpenAI's Responses API at /v1/responses, driven only by the `openai`
 * package's `responses.*`. The scripted model calls list_files, then answers; Orion runs the tool.
 */
const ANSWER = 'The guides folder holds install.md and usage.md.';
const chained = () => [respond.turn([{ toolCall: { name: 'list_files', args: { path: 'guides' }, id: 'l1' } }]), respond.turn([{ text: 'The guides folder holds ' }, { text: 'install.md and usage.md.' }])];
const collect = async <T>(stream: AsyncIterable<T>, until?: (e: T) => boolean): Promise<T[]> => {
  const out: T[] = [];
  for await (const e of stream) {
    out.push(e);
    if (until?.(e)) break;
  }
  return out;
};
const seqs = (events: ResponseStreamEvent[]) => events.map((e) => e.sequence_number);
const range = (from: number, n: number) => Array.from({ length: n }, (_, i) => from + i);

describe('OpenAI Responses API (/v1/responses)', () => {
  let llm: ReplayServer;
  let t: TestApp;
  let client: OpenAI;

  beforeAll(async () => {
    llm = await ReplayServer.start();
    t = await startApp({ LLM_PROVIDER: 'openai', LLM_BASE_URL: llm.openAiBaseUrl, LLM_MODEL: 'model-a', TOOLS_REQUIRE_APPROVAL: 'read_file' });
    mkdirSync(join(t.workspace, 'default', 'guides'), { recursive: true });
    writeFileSync(join(t.workspace, 'default', 'guides', 'install.md'), '# Install\n');
    writeFileSync(join(t.workspace, 'default', 'guides', 'usage.md'), '# Usage\n');
    client = new OpenAI({ baseURL: `${t.url}/v1`, apiKey: 'unused', maxRetries: 0 });
  }, 120_000);
  afterAll(async () => {
    await t?.close();
    await llm?.close();
  });
  beforeEach(() => llm.reset());

  it('responses.create answers a chained turn: the tool call Orion ran as an mcp_call item, then the message, with usage', async () => {
    llm.enqueue(...chained());
    const response = await client.responses.create({ model: 'orion-unified', input: 'What is in the guides folder?' });
    expect(response.status).toBe('completed');
    expect(response.output_text).toBe(ANSWER);
    expect(response.output.map((o) => o.type)).toEqual(['mcp_call', 'message']);
    expect(response.output[0]).toMatchObject({ type: 'mcp_call', server_label: 'orion', name: 'list_files', arguments: JSON.stringify({ path: 'guides' }), status: 'completed', output: null });
    expect(response.usage?.total_tokens).toBeGreaterThan(0);
    expect(response.conversation?.id).toMatch(/^[0-9a-f-]{36}$/);
    // the response is its run
    const run = (await (await fetch(`${t.url}/api/chat/runs/${response.id.replace(/^resp_/, '')}`)).json()) as { status: string };
    expect(run.status).toBe('completed');
    expect(await client.responses.retrieve(response.id)).toMatchObject({ id: response.id, status: 'completed', output_text: ANSWER });
  });

  it('stream true: the documented event order with gap-free sequence numbers, the deltas making the answer', async () => {
    llm.enqueue(...chained());
    const events = await collect(await client.responses.create({ model: 'orion-unified', input: 'What is in the guides folder?', stream: true }));
    const types = events.map((e) => e.type);
    // the model's two deltas come in one read here and may be one chunk: one delta event or more, in their place
    expect(types.filter((type, i) => !(type === 'response.output_text.delta' && types[i - 1] === type))).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.mcp_call.in_progress',
      'response.mcp_call.completed',
      'response.output_item.done',
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.delta',
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.completed',
    ]);
    expect(seqs(events)).toEqual(range(0, events.length));
    const deltas = events.flatMap((e) => (e.type === 'response.output_text.delta' ? [e.delta] : []));
    expect(deltas.join('')).toBe(ANSWER);
    const done = events.at(-1)!;
    if (done.type !== 'response.completed') throw new Error(done.type);
    expect(done.response.output.map((o) => o.type)).toEqual(['mcp_call', 'message']);
  });

  it('previous_response_id continues the conversation: the model sees the earlier turn', async () => {
    llm.enqueue(respond.turn([{ text: 'Noted: the code word is heron.' }]));
    const first = await client.responses.create({ model: 'orion-unified', input: 'Remember the code word heron.' });
    llm.enqueue(respond.turn([{ text: 'It was heron.' }]));
    const second = await client.responses.create({ model: 'orion-unified', input: 'What was the code word?', previous_response_id: first.id });
    expect(second.output_text).toBe('It was heron.');
    expect(second.previous_response_id).toBe(first.id);
    expect(second.conversation?.id).toBe(first.conversation?.id);
    expect(JSON.stringify(llm.chatRequests.at(-1)!.body)).toContain('Remember the code word heron.');
    // conversation (Orion's id) does the same
    llm.enqueue(respond.turn([{ text: 'Still heron.' }]));
    const third = await client.responses.create({ model: 'orion-unified', input: 'And now?', conversation: first.conversation!.id });
    expect(third.conversation?.id).toBe(first.conversation?.id);
    await expect(client.responses.create({ model: 'orion-unified', input: 'hi', previous_response_id: 'resp_00000000-0000-4000-8000-000000000000' })).rejects.toMatchObject({ status: 404 });
    // a response's own output sent back as history, then the new message
    llm.enqueue(respond.turn([{ text: 'You said heron.' }]));
    const replayed = await client.responses.create({ model: 'orion-unified', input: [{ role: 'user', content: 'Remember the code word heron.' }, ...first.output, { role: 'user', content: 'Which word?' }] as never });
    expect(replayed.output_text).toBe('You said heron.');
    expect(replayed.conversation?.id).not.toBe(first.conversation?.id);
    expect(JSON.stringify(llm.chatRequests.at(-1)!.body)).toContain('Noted: the code word is heron.');
  });

  it('background: answers at once, is retrieved and streamed from starting_after, and another background response is cancelled', async () => {
    const held = respond.turn([{ text: 'Part one. ' }, { text: 'Part two.' }], { faults: { stallAfter: 2 } });
    llm.enqueue(held);
    const started = await client.responses.create({ model: 'orion-unified', input: 'Write two parts', background: true });
    expect(started.status).toBe('in_progress');
    expect(started.background).toBe(true);
    const first = await collect(await client.responses.retrieve(started.id, { stream: true }), (e) => e.type === 'response.output_text.delta');
    expect(first.map((e) => e.type).slice(0, 2)).toEqual(['response.created', 'response.in_progress']);
    const after = first.at(-1)!.sequence_number;
    const cancelled = await client.responses.cancel(started.id);
    expect(cancelled.status).toBe('cancelled');
    expect((await client.responses.retrieve(started.id)).status).toBe('cancelled');
    const rest = await collect(await client.responses.retrieve(started.id, { stream: true, starting_after: after }));
    expect(seqs(rest)).toEqual(range(after + 1, rest.length));
    expect(rest.at(-1)).toMatchObject({ type: 'response.incomplete', response: { status: 'cancelled' } });
    await waitFor(() => llm.chatRequests[0].closedEarlyAt !== undefined);
  });

  it('a call that needs approval: the response names it as an mcp_approval_request and waits; once decided on Orion’s route it completes', async () => {
    llm.enqueue(respond.turn([{ toolCall: { name: 'read_file', args: { path: 'guides/install.md' }, id: 'r1' } }]), respond.turn([{ text: 'It says Install.' }]));
    const waiting = await client.responses.create({ model: 'orion-unified', input: 'Read the install guide' });
    expect(waiting.status).toBe('in_progress');
    const ask = waiting.output.find((o) => o.type === 'mcp_approval_request');
    if (ask?.type !== 'mcp_approval_request') throw new Error('no mcp_approval_request item');
    expect(ask.name).toBe('read_file');
    expect(JSON.parse(ask.arguments)).toMatchObject({ path: 'guides/install.md' });
    const requestId = waiting.id.replace(/^resp_/, '');
    const decided = await fetch(`${t.url}/api/chat/runs/${requestId}/approvals/${ask.id}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ decision: 'approve' }) });
    expect(decided.status).toBe(200);
    const done = await waitFor(async () => {
      const r = await client.responses.retrieve(waiting.id);
      return r.status === 'completed' ? r : null;
    });
    expect(done.output_text).toBe('It says Install.');
    expect(done.output.map((o) => o.type)).toEqual(['mcp_call', 'mcp_approval_request', 'message']);
  });

  it("the README's Responses example runs as written and prints the answer", async () => {
    llm.enqueue(...chained());
    const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', readmeExample('responses')], { cwd: join(__dirname, '..', '..'), env: { ...process.env, ORION_URL: t.url }, timeout: 60_000 });
    expect(stdout.trim()).toBe(ANSWER);
    expect(llm.chatRequests).toHaveLength(2);
  });

  it('refuses unsupported fields by name, in OpenAI’s error shape, before any model call', async () => {
    const refused = async (body: Record<string, unknown>) => {
      const err = (await client.responses.create({ model: 'orion-unified', input: 'hi', ...body } as never).catch((e: unknown) => e)) as InstanceType<typeof OpenAI.APIError>;
      expect(err).toBeInstanceOf(OpenAI.BadRequestError);
      return err.param;
    };
    expect(await refused({ temperature: 0.2 })).toBe('temperature');
    expect(await refused({ tools: [{ type: 'function', name: 'f', parameters: {}, strict: true }] })).toBe('tools');
    expect(await refused({ store: false })).toBe('store');
    expect(await refused({ frobnicate: 1 })).toBe('frobnicate');
    expect(await refused({ input: [{ type: 'function_call_output', call_id: 'x', output: '1' }] })).toBe('input[0].type');
    expect(await refused({ conversation: 'c1', previous_response_id: 'resp_x' })).toBe('conversation');
    expect(await refused({ parallel_tool_calls: false })).toBe('parallel_tool_calls');
    expect(llm.chatRequests).toHaveLength(0);
  });
});

describe('OpenAI Responses API across two instances', () => {
  let llm: ReplayServer;
  let a: TestApp;
  let b: TestApp;

  beforeAll(async () => {
    llm = await ReplayServer.start();
    const env = { LLM_PROVIDER: 'openai', LLM_BASE_URL: llm.openAiBaseUrl, LLM_MODEL: 'model-a' };
    a = await startApp(env);
    b = await startPeer(a, env);
  }, 120_000);
  afterAll(async () => {
    await b?.close();
    await a?.close();
    await llm?.close();
  });

  itOnPostgres('two instances share one database', "a background response's stream resumed with starting_after on the other instance", async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    llm.enqueue(
      respond.handler(async (_req, res) => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        const frame = (content: string) => `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 0, model: 'model-a', choices: [{ index: 0, delta: { content }, finish_reason: null }] })}\n\n`;
        res.write(frame('First half, '));
        await gate;
        res.write(frame('second half.'));
        res.write(`data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 0, model: 'model-a', choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] })}\n\n`);
        res.end('data: [DONE]\n\n');
      }),
    );
    const onA = new OpenAI({ baseURL: `${a.url}/v1`, apiKey: 'unused', maxRetries: 0 });
    const onB = new OpenAI({ baseURL: `${b.url}/v1`, apiKey: 'unused', maxRetries: 0 });
    const started = await onA.responses.create({ model: 'orion-unified', input: 'Two halves', background: true });
    const first = await collect(await onA.responses.retrieve(started.id, { stream: true }), (e) => e.type === 'response.output_text.delta');
    const after = first.at(-1)!.sequence_number;
    const resumed = onB.responses.retrieve(started.id, { stream: true, starting_after: after });
    release();
    const rest = await collect(await resumed);
    expect(seqs(rest)).toEqual(range(after + 1, rest.length));
    const deltas = [...first, ...rest].flatMap((e) => (e.type === 'response.output_text.delta' ? [e.delta] : []));
    expect(deltas.join('')).toBe('First half, second half.');
    const done = rest.at(-1)!;
    expect(done.type).toBe('response.completed');
    const message = (done as { response: OpenAiResponse }).response.output.find((o) => o.type === 'message');
    expect(message?.type === 'message' && message.content.map((c) => (c.type === 'output_text' ? c.text : '')).join('')).toBe('First half, second half.');
    expect((await onB.responses.retrieve(started.id)).output_text).toBe('First half, second half.');
  });
});
