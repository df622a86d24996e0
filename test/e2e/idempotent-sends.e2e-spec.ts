import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import OpenAI from 'openai';
import { DataSource } from 'typeorm';
import { ToolRegistryService } from '../../src/tools/tool-registry.service';
import { startApp, startPeer, type TestApp } from '../support/app';
import { describeOnPostgres } from '../support/db';
import { readmeExample } from '../support/readme-example';
import { ReplayServer, respond } from '../support/replay-server';
import { sse, type SseResponse } from '../support/sse-client';
import { gatedTool } from '../support/test-tools';
import { waitFor } from '../support/wait-for';

/**
 * Issue 42, item 3: a retry never runs the turn again. Sends named by the same Idempotency-Key
 * (one after the other, at once, on two instances) give one run, one stored question and one
 * answer; another body with the key is a 422; and the `openai` package, with its default retries,
 * against a /v1 call that waits for approval, leaves one conversation.
 */

/** A tool that holds its call until the test opens it, so a turn is live while other sends arrive. */
const gatedTurn = (answer: string) => [respond.turn([{ toolCall: { name: 'probe_gate', args: { step: 'one' }, id: 'g1' } }]), respond.turn([{ text: answer }])];

async function count(t: TestApp, sql: string, params: unknown[] = []): Promise<number> {
  const rows = (await t.app.get(DataSource).query(sql, params)) as Array<{ n: string | number }>;
  return Number(rows[0].n);
}

type Message = { role: string; content: string; requestId: string };
const messagesOf = async (t: TestApp, conversationId: string) => (await (await fetch(`${t.url}/api/chat/conversations/${conversationId}/messages`)).json()) as Message[];

describe('Idempotency-Key on the routes that start a run', () => {
  let llm: ReplayServer;
  let t: TestApp;
  const { gate, tool } = gatedTool();

  beforeAll(async () => {
    llm = await ReplayServer.start();
    t = await startApp({ LLM_PROVIDER: 'openai', LLM_BASE_URL: llm.openAiBaseUrl, LLM_MODEL: 'scripted-model', TWO_STAGE_ENABLED: 'true', ORCHESTRATION_DEFAULT_MODE: 'Classic' });
    t.app.get(ToolRegistryService).register(tool);
    mkdirSync(join(t.workspace, 'default'), { recursive: true });
    writeFileSync(join(t.workspace, 'default', 'README.md'), '# Readme\n');
  }, 120_000);
  afterAll(async () => {
    await t?.close();
    await llm?.close();
  });
  beforeEach(() => {
    llm.reset();
    gate.arm();
  });

  const send = (body: Record<string, unknown>, key?: string, route = '/api/chat/messages') =>
    sse(`${t.url}${route}`, { body, timeoutMs: 60_000, headers: key ? { 'Idempotency-Key': key } : {} });
  const runs = () => count(t, 'SELECT count(*) AS n FROM runs');
  const conversations = () => count(t, 'SELECT count(*) AS n FROM conversations');
  const userMessages = (content: string) => count(t, `SELECT count(*) AS n FROM chat_messages WHERE role = 'user' AND content = $1`, [content]);
  const ids = (r: SseResponse) => r.events.map((e) => [e.id, e.event]);

  it('a second send with the same key and body, after the first ended, replays its run: the same events, no second turn', async () => {
    llm.enqueue(respond.turn([{ text: 'The only answer.' }]));
    const key = randomUUID();
    const [runsBefore, conversationsBefore] = [await runs(), await conversations()];
    const first = await send({ content: 'Sequential question' }, key);
    const second = await send({ content: 'Sequential question' }, key);
    expect(first.status).toBe(200);
    expect(second.status).toBe(200);
    expect(ids(second)).toEqual(ids(first));
    expect(second.events.at(-1)).toMatchObject({ event: 'done', data: { fullContent: 'The only answer.', requestId: first.events[0].data.requestId } });
    expect(llm.chatRequests).toHaveLength(1);
    expect(await runs()).toBe(runsBefore + 1);
    expect(await conversations()).toBe(conversationsBefore + 1);
    const conversationId = first.events[0].data.conversationId as string;
    expect((await messagesOf(t, conversationId)).map((m) => [m.role, m.content])).toEqual([
      ['user', 'Sequential question'],
      ['assistant', 'The only answer.'],
    ]);
  });

  it('in an existing conversation too: the retry is not refused as busy nor stored as a second question', async () => {
    llm.enqueue(respond.turn([{ text: 'Opening answer.' }]));
    const conversationId = (await send({ content: 'Opening' })).events[0].data.conversationId as string;
    llm.enqueue(...gatedTurn('Second answer.'));
    const key = randomUUID();
    const body = { content: 'Second question', conversationId };
    const first = send(body, key);
    await gate.reached;
    // the conversation's turn is active: without the key this would be 409 conversation_busy
    const retry = send(body, key);
    await waitFor(async () => (await count(t, 'SELECT count(*) AS n FROM runs WHERE conversation_id = $1', [conversationId])) === 2, { what: 'the first run stored' });
    gate.open();
    const [a, b] = await Promise.all([first, retry]);
    expect(b.status).toBe(200);
    expect(ids(b)).toEqual(ids(a));
    expect(b.events.at(-1)?.data.fullContent).toBe('Second answer.');
    expect(llm.chatRequests).toHaveLength(3);
    expect((await messagesOf(t, conversationId)).map((m) => m.content)).toEqual(['Opening', 'Opening answer.', 'Second question', 'Second answer.']);
  });

  it('a send with the key while the first is live follows it from its first event to its end, as a reconnect would', async () => {
    llm.enqueue(...gatedTurn('Live answer.'));
    const key = randomUUID();
    const first = send({ content: 'Live question' }, key);
    await gate.reached;
    // the follower has what was stored so far and waits for the rest: the gate opens once it has read its first event
    let attached!: () => void;
    const reading = new Promise<void>((resolve) => (attached = resolve));
    const follower = sse(`${t.url}/api/chat/messages`, { body: { content: 'Live question' }, timeoutMs: 60_000, headers: { 'Idempotency-Key': key }, onEvent: () => void attached() });
    await reading;
    gate.open();
    const [a, b] = await Promise.all([first, follower]);
    expect(b.events[0]).toMatchObject({ id: '1', event: 'start' });
    expect(ids(b)).toEqual(ids(a));
    expect(b.events.at(-1)).toMatchObject({ event: 'done', data: { fullContent: 'Live answer.' } });
    expect(llm.chatRequests).toHaveLength(2);
    expect(await userMessages('Live question')).toBe(1);
  });

  it('sends at once with one key start one turn: every one streams the same run', async () => {
    llm.enqueue(...gatedTurn('Concurrent answer.'));
    const key = randomUUID();
    const runsBefore = await runs();
    const all = Array.from({ length: 6 }, () => send({ content: 'Concurrent question' }, key));
    await gate.reached;
    gate.open();
    const results = await Promise.all(all);
    for (const r of results) expect(r.status).toBe(200);
    const requestIds = new Set(results.map((r) => r.events[0].data.requestId));
    expect(requestIds.size).toBe(1);
    for (const r of results) expect(ids(r)).toEqual(ids(results[0]));
    for (const r of results) expect(r.events.at(-1)?.data.fullContent).toBe('Concurrent answer.');
    expect(await runs()).toBe(runsBefore + 1);
    expect(await userMessages('Concurrent question')).toBe(1);
    expect(llm.chatRequests).toHaveLength(2);
  });

  it('the same key with another body is 422 idempotency_key_reused naming the first request; nothing is stored or run', async () => {
    llm.enqueue(respond.turn([{ text: 'First body answer.' }]));
    const key = randomUUID();
    const first = await send({ content: 'First body' }, key);
    const [runsBefore, conversationsBefore] = [await runs(), await conversations()];
    const other = await send({ content: 'Another body' }, key);
    expect(other.status).toBe(422);
    expect(JSON.parse(other.body)).toMatchObject({ statusCode: 422, error: 'idempotency_key_reused', requestId: first.events[0].data.requestId, message: expect.stringContaining('another route or body') });
    // the same body on another route is another request too
    const elsewhere = await send({ content: 'First body' }, key, '/api/chat/messages_two_stage');
    expect(elsewhere.status).toBe(422);
    expect(await runs()).toBe(runsBefore);
    expect(await conversations()).toBe(conversationsBefore);
    expect(await userMessages('Another body')).toBe(0);
    expect(llm.chatRequests).toHaveLength(1);
  });

  it('keys are per project: the same key in another project is another send', async () => {
    llm.enqueue(respond.turn([{ text: 'Default answer.' }]), respond.turn([{ text: 'Other answer.' }]));
    mkdirSync(join(t.workspace, 'other'), { recursive: true });
    const key = randomUUID();
    const a = await send({ content: 'Per project' }, key);
    const b = await send({ content: 'Per project', projectId: 'other' }, key);
    expect(b.events[0].data.requestId).not.toBe(a.events[0].data.requestId);
    expect(b.events.at(-1)?.data.fullContent).toBe('Other answer.');
  });

  it('a keyed run goes on when its client leaves, so the retry gets the whole answer', async () => {
    llm.enqueue(...gatedTurn('Answer after the drop.'));
    const key = randomUUID();
    const dropped = await sse(`${t.url}/api/chat/messages`, { body: { content: 'Dropped question' }, headers: { 'Idempotency-Key': key }, onEvent: (e) => (e.event === 'tool_progress' ? 'close' : undefined), timeoutMs: 30_000 });
    await gate.reached;
    expect(dropped.events.at(-1)?.event).toBe('tool_progress');
    const requestId = dropped.events[0].data.requestId as string;
    // the client is gone and the run still waits in its tool: it went on without its client
    expect(await (await fetch(`${t.url}/api/chat/runs/${requestId}`)).json()).toMatchObject({ status: 'running' });
    gate.open();
    const retry = await send({ content: 'Dropped question' }, key);
    expect(retry.events[0].data.requestId).toBe(requestId);
    expect(retry.events.at(-1)).toMatchObject({ event: 'done', data: { stopReason: 'final_answer', fullContent: 'Answer after the drop.' } });
    expect(await userMessages('Dropped question')).toBe(1);
  });

  it('a bad key is a 400 before anything is stored', async () => {
    const runsBefore = await runs();
    const long = await send({ content: 'Bad key' }, 'k'.repeat(256));
    expect(long.status).toBe(400);
    expect(JSON.parse(long.body)).toMatchObject({ error: 'invalid_idempotency_key', message: expect.stringContaining('1-255 printable ASCII characters') });
    expect(await runs()).toBe(runsBefore);
  });

  it('two-stage, the AI SDK route and /v1 without a stream: a retry with the key gives the first result and runs nothing', async () => {
    llm.enqueue(respond.turn([{ text: 'Two-stage answer.' }]));
    const key1 = randomUUID();
    const ts1 = await send({ content: 'Two-stage question' }, key1, '/api/chat/messages_two_stage');
    const twoStageCalls = llm.chatRequests.length;
    const ts2 = await send({ content: 'Two-stage question' }, key1, '/api/chat/messages_two_stage');
    expect(ids(ts2)).toEqual(ids(ts1));
    expect(ts2.events.at(-1)?.data.fullContent).toBe('Two-stage answer.');
    expect(llm.chatRequests).toHaveLength(twoStageCalls);
    expect(await userMessages('Two-stage question')).toBe(1);

    // the AI SDK route: the same parts, one turn
    llm.reset().enqueue(respond.turn([{ text: 'UI answer.' }]));
    const ui = { id: `chat-${randomUUID()}`, messages: [{ id: 'u1', role: 'user', parts: [{ type: 'text', text: 'UI question' }] }], trigger: 'submit-message' };
    const key2 = randomUUID();
    const uiText = async () => {
      const res = await fetch(`${t.url}/api/chat/ui`, { method: 'POST', headers: { 'content-type': 'application/json', 'Idempotency-Key': key2 }, body: JSON.stringify(ui) });
      expect(res.status).toBe(200);
      return res.text();
    };
    const deltas = (s: string) => s.split('\n').filter((l) => l.includes('"text-delta"')).join('\n');
    const ui1 = await uiText();
    const ui2 = await uiText();
    expect(deltas(ui1)).toContain('UI answer.');
    expect(deltas(ui2)).toBe(deltas(ui1));
    expect(llm.chatRequests).toHaveLength(1);
    expect(await userMessages('UI question')).toBe(1);

    // /v1 without a stream: the same completion
    const openai = new OpenAI({ baseURL: `${t.url}/v1`, apiKey: 'unused-in-local-mode', maxRetries: 0 });
    llm.reset().enqueue(respond.turn([{ text: 'Completion answer.' }]));
    const key3 = randomUUID();
    const body = { model: 'orion-unified', messages: [{ role: 'user' as const, content: 'Completion question' }] };
    const c1 = await openai.chat.completions.create(body, { headers: { 'Idempotency-Key': key3 } });
    const c2 = await openai.chat.completions.create(body, { headers: { 'Idempotency-Key': key3 } });
    expect(c2.id).toBe(c1.id);
    expect(c2.choices[0].message.content).toBe('Completion answer.');
    expect(llm.chatRequests).toHaveLength(1);
    expect(await userMessages('Completion question')).toBe(1);
  });

  it('/v1: a streamed retry with the key follows the same run; another body is 422 in OpenAI\'s shape', async () => {
    const openai = new OpenAI({ baseURL: `${t.url}/v1`, apiKey: 'unused-in-local-mode', maxRetries: 0 });
    llm.enqueue(respond.turn([{ text: 'Streamed ' }, { text: 'answer.' }]));
    const key = randomUUID();
    const body = { model: 'orion-unified', messages: [{ role: 'user' as const, content: 'Streamed question' }], stream: true as const };
    const read = async () => {
      let text = '';
      let id = '';
      for await (const chunk of await openai.chat.completions.create(body, { headers: { 'Idempotency-Key': key } })) {
        text += chunk.choices[0]?.delta?.content ?? '';
        id = chunk.id;
      }
      return { text, id };
    };
    const a = await read();
    const b = await read();
    expect(b).toEqual(a);
    expect(a.text).toBe('Streamed answer.');
    const other = await openai.chat.completions.create({ ...body, stream: false }, { headers: { 'Idempotency-Key': key } }).catch((e: unknown) => e);
    expect(other).toBeInstanceOf(OpenAI.UnprocessableEntityError);
    expect((other as InstanceType<typeof OpenAI.APIError>).code).toBe('idempotency_key_reused');
    expect(llm.chatRequests).toHaveLength(1);
    expect(await userMessages('Streamed question')).toBe(1);
  });

  it('tool-only execution: a retry with the key returns the stored result without a second model call', async () => {
    llm.enqueue(respond.turn([{ toolCall: { name: 'list_files', args: { path: '.' } } }]));
    const key = randomUUID();
    const execute = async (userInput: string) => {
      const res = await fetch(`${t.url}/api/orchestration/execute`, { method: 'POST', headers: { 'content-type': 'application/json', 'Idempotency-Key': key }, body: JSON.stringify({ userInput }) });
      return { status: res.status, body: (await res.json()) as Record<string, unknown> };
    };
    const [a, b] = await Promise.all([execute('list the files'), execute('list the files')]);
    expect(a.status).toBe(200);
    expect(b).toEqual(a);
    expect(a.body).toMatchObject({ isSuccess: true });
    const c = await execute('list the files');
    expect(c).toEqual(a);
    expect(llm.chatRequests).toHaveLength(1);
    const other = await execute('something else');
    expect(other).toMatchObject({ status: 422, body: { error: 'idempotency_key_reused' } });
    expect(llm.chatRequests).toHaveLength(1);
  });
});

describe('/v1 and a call that waits for approval, with the openai package\'s default retries', () => {
  let llm: ReplayServer;
  let t: TestApp;
  const QUESTION = 'What is in the guides folder?';
  const waitingTurn = (answer: string) => [respond.turn([{ toolCall: { name: 'list_files', args: { path: 'guides' }, id: 'l1' } }]), respond.turn([{ text: answer }])];

  beforeAll(async () => {
    llm = await ReplayServer.start();
    t = await startApp({ LLM_PROVIDER: 'openai', LLM_BASE_URL: llm.openAiBaseUrl, LLM_MODEL: 'model-a', TOOLS_REQUIRE_APPROVAL: 'list_files' });
    mkdirSync(join(t.workspace, 'default', 'guides'), { recursive: true });
    writeFileSync(join(t.workspace, 'default', 'guides', 'install.md'), '# Install\n');
  }, 120_000);
  afterAll(async () => {
    await t?.close();
    await llm?.close();
  });
  beforeEach(() => llm.reset());

  const conversations = () => count(t, 'SELECT count(*) AS n FROM conversations');
  const decide = (requestId: string, approvalId: string) =>
    fetch(`${t.url}/api/chat/runs/${requestId}/approvals/${approvalId}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ decision: 'approve' }) });
  const storedAnswer = (conversationId: string) =>
    waitFor(async () => (await messagesOf(t, conversationId)).find((m) => m.role === 'assistant')?.content, { what: 'the answer stored', timeoutMs: 30_000 });

  it('answers at once with 409 approval_required and x-should-retry: false, so the package does not retry: one conversation, then the answer once decided', async () => {
    llm.enqueue(...waitingTurn('Approved: install.md.'));
    // the package's defaults (2 retries, on 409 among others), with a timeout short enough for a test
    const openai = new OpenAI({ baseURL: `${t.url}/v1`, apiKey: 'unused-in-local-mode', timeout: 3_000 });
    const before = await conversations();
    const err = (await openai.chat.completions.create({ model: 'orion-unified', messages: [{ role: 'user', content: QUESTION }] }).catch((e: unknown) => e)) as InstanceType<typeof OpenAI.APIError>;
    // an answer, not the package's timeout (that would be an APIConnectionTimeoutError after its retries)
    expect(err).toBeInstanceOf(OpenAI.ConflictError);
    expect(err.code).toBe('approval_required');
    expect(err.headers?.get('x-should-retry')).toBe('false');
    const orion = (err.error as { orion: { request_id: string; conversation_id: string; approval_id: string; tool: string } }).orion;
    expect(orion.tool).toBe('list_files');
    expect(err.message).toContain(`POST /api/chat/runs/${orion.request_id}/approvals/${orion.approval_id}`);
    expect(await conversations()).toBe(before + 1);
    expect(llm.chatRequests).toHaveLength(1);
    expect(await (await fetch(`${t.url}/api/chat/runs/${orion.request_id}`)).json()).toMatchObject({ status: 'awaiting_approval' });
    expect((await decide(orion.request_id, orion.approval_id)).status).toBe(200);
    expect(await storedAnswer(orion.conversation_id)).toBe('Approved: install.md.');
    expect(await conversations()).toBe(before + 1);
  });

  it('with an Idempotency-Key, the same call after the decision returns the answer of that one turn', async () => {
    llm.enqueue(...waitingTurn('Keyed and approved.'));
    const openai = new OpenAI({ baseURL: `${t.url}/v1`, apiKey: 'unused-in-local-mode', timeout: 3_000 });
    const key = randomUUID();
    const call = () => openai.chat.completions.create({ model: 'orion-unified', messages: [{ role: 'user', content: QUESTION }] }, { headers: { 'Idempotency-Key': key } });
    const before = await conversations();
    const err = (await call().catch((e: unknown) => e)) as InstanceType<typeof OpenAI.APIError>;
    expect(err.code).toBe('approval_required');
    expect(err.message).toContain('send this request again with the same Idempotency-Key');
    // asked again before the decision: the same approval, still no second turn
    const again = (await call().catch((e: unknown) => e)) as InstanceType<typeof OpenAI.APIError>;
    const orion = (err.error as { orion: { request_id: string; approval_id: string } }).orion;
    expect((again.error as { orion: { approval_id: string } }).orion.approval_id).toBe(orion.approval_id);
    expect((await decide(orion.request_id, orion.approval_id)).status).toBe(200);
    const completion = await call();
    expect(completion.id).toBe(`chatcmpl-${orion.request_id}`);
    expect(completion.choices[0].message.content).toBe('Keyed and approved.');
    expect(await conversations()).toBe(before + 1);
    expect(llm.chatRequests).toHaveLength(2);
  });

  it('the README\'s openai example, with approvals on, ends with one conversation and an error naming the approval', async () => {
    llm.enqueue(...waitingTurn('unused'));
    const before = await conversations();
    const run = promisify(execFile)(process.execPath, ['--input-type=module', '-e', readmeExample('openai')], { cwd: join(__dirname, '..', '..'), env: { ...process.env, ORION_URL: t.url }, timeout: 30_000 });
    const failed = (await run.then(() => null, (e: unknown) => e)) as { stderr: string; killed?: boolean } | null;
    expect(failed?.killed).toBeFalsy();
    expect(failed?.stderr).toMatch(/409 The turn waits for approval of list_files \(approvalId [0-9a-f-]+\); decide it with POST \/api\/chat\/runs\//);
    expect(await conversations()).toBe(before + 1);
    expect(llm.chatRequests).toHaveLength(1);
  });
});

describeOnPostgres('two instances share one database (PGlite in memory cannot)', 'Idempotency-Key across two instances', () => {
  let llm: ReplayServer;
  let a: TestApp;
  let b: TestApp;
  const { gate, tool } = gatedTool();

  beforeAll(async () => {
    llm = await ReplayServer.start();
    const env = { LLM_PROVIDER: 'openai', LLM_BASE_URL: llm.openAiBaseUrl, LLM_MODEL: 'scripted-model' };
    a = await startApp(env);
    b = await startPeer(a, env);
    for (const x of [a, b]) x.app.get(ToolRegistryService).register(tool);
  }, 120_000);
  afterAll(async () => {
    await b?.app.close();
    await a?.close();
    await llm?.close();
  });
  beforeEach(() => {
    llm.reset();
    gate.arm();
  });

  const send = (x: TestApp, body: Record<string, unknown>, key: string) => sse(`${x.url}/api/chat/messages`, { body, timeoutMs: 60_000, headers: { 'Idempotency-Key': key } });

  it('sends at once with one key, half on A and half on B, start one turn; every one streams it to its end', async () => {
    llm.enqueue(...gatedTurn('One answer across instances.'));
    const key = randomUUID();
    const runsBefore = await count(a, 'SELECT count(*) AS n FROM runs');
    const all = Array.from({ length: 10 }, (_, i) => send(i % 2 ? b : a, { content: 'Two instances question' }, key));
    await gate.reached;
    gate.open();
    const results = await Promise.all(all);
    for (const r of results) expect(r.status).toBe(200);
    expect(new Set(results.map((r) => r.events[0].data.requestId)).size).toBe(1);
    for (const r of results) expect(r.events.map((e) => [e.id, e.event])).toEqual(results[0].events.map((e) => [e.id, e.event]));
    for (const r of results) expect(r.events.at(-1)?.data.fullContent).toBe('One answer across instances.');
    expect(await count(a, 'SELECT count(*) AS n FROM runs')).toBe(runsBefore + 1);
    expect(await count(b, `SELECT count(*) AS n FROM chat_messages WHERE role = 'user' AND content = 'Two instances question'`)).toBe(1);
    const conversationId = results[0].events[0].data.conversationId as string;
    expect((await messagesOf(b, conversationId)).map((m) => [m.role, m.content])).toEqual([
      ['user', 'Two instances question'],
      ['assistant', 'One answer across instances.'],
    ]);
    expect(llm.chatRequests).toHaveLength(2);
  });

  it('a retry on B of a send that A finished replays it; another body on B is 422', async () => {
    llm.enqueue(respond.turn([{ text: 'Finished on A.' }]));
    const key = randomUUID();
    const first = await send(a, { content: 'Finished question' }, key);
    const retry = await send(b, { content: 'Finished question' }, key);
    expect(retry.events.map((e) => [e.id, e.event])).toEqual(first.events.map((e) => [e.id, e.event]));
    const other = await send(b, { content: 'Different question' }, key);
    expect(other.status).toBe(422);
    expect(llm.chatRequests).toHaveLength(1);
  });
});
