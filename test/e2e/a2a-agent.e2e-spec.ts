import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { type StreamResponse, type Task, TaskState } from '@a2a-js/sdk';
import { a2aClient, sendParams, userMessage } from '../support/a2a-client';
import { startApp, type TestApp } from '../support/app';
import { ReplayServer, respond } from '../support/replay-server';
import { waitFor } from '../support/wait-for';
import { WebhookReceiver } from '../support/webhook-receiver';

/**
 * Issue 47 item 3: Orion as an A2A agent, driven by @a2a-js/sdk's own client (card resolver,
 * JSON-RPC transport). A task is an Orion run: its answer streams as the answer artifact, cancel is
 * Orion's cancel, a call that needs approval puts the task in input-required.
 */
const ROOT = 'a2a-root-key';
const ANSWER = 'The guides folder holds install.md and usage.md.';
const toolThenAnswer = () => [respond.turn([{ toolCall: { name: 'list_files', args: { path: 'guides' }, id: 'l1' } }]), respond.turn([{ text: 'The guides folder holds ' }, { text: 'install.md and usage.md.' }])];

const textOf = (task: Task, artifactId: string) =>
  task.artifacts
    .filter((a) => a.artifactId === artifactId)
    .flatMap((a) => a.parts)
    .map((p) => (p.content?.$case === 'text' ? p.content.value : ''))
    .join('');

describe('A2A agent (/.well-known/agent-card.json, /a2a)', () => {
  let llm: ReplayServer;
  let t: TestApp;
  let keyAlpha: string;
  let keyBeta: string;
  let hooks: WebhookReceiver;

  const api = async (path: string, init: RequestInit = {}) => fetch(`${t.url}${path}`, { ...init, headers: { authorization: `Bearer ${ROOT}`, 'content-type': 'application/json', ...init.headers } });
  const connect = (key: string) => a2aClient(t.url, key);
  const collect = async (stream: AsyncIterable<StreamResponse>) => {
    const out: StreamResponse[] = [];
    for await (const r of stream) out.push(r);
    return out;
  };
  const finalState = (rs: StreamResponse[]) => {
    const last = rs.at(-1)?.payload;
    return last?.$case === 'statusUpdate' ? last.value.status?.state : undefined;
  };
  const streamedAnswer = (rs: StreamResponse[]) =>
    rs
      .flatMap((r) => (r.payload?.$case === 'artifactUpdate' && r.payload.value.artifact?.artifactId === 'answer' ? r.payload.value.artifact.parts : []))
      .map((p) => (p.content?.$case === 'text' ? p.content.value : ''))
      .join('');
  const taskIdOf = (rs: StreamResponse[]) => {
    const first = rs[0]?.payload;
    if (first?.$case !== 'task') throw new Error(`the first response is ${first?.$case}`);
    return first.value.id;
  };

  beforeAll(async () => {
    llm = await ReplayServer.start();
    hooks = await WebhookReceiver.start();
    t = await startApp({ LLM_PROVIDER: 'openai', LLM_BASE_URL: llm.openAiBaseUrl, LLM_MODEL: 'model-a', API_KEYS: ROOT, TOOLS_REQUIRE_APPROVAL: 'read_file', WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_POLL_MS: '50' });
    mkdirSync(join(t.workspace, 'alpha', 'guides'), { recursive: true });
    writeFileSync(join(t.workspace, 'alpha', 'guides', 'install.md'), '# Install\n');
    writeFileSync(join(t.workspace, 'alpha', 'guides', 'usage.md'), '# Usage\n');
    const key = async (name: string, project: string) => ((await (await api('/api/admin/keys', { method: 'POST', body: JSON.stringify({ name, projects: [project], role: 'user' }) })).json()) as { key: string }).key;
    keyAlpha = await key('alpha agent', 'alpha');
    keyBeta = await key('beta agent', 'beta');
    const secret = ((await (await api('/api/admin/projects/alpha/webhook', { method: 'PUT', body: '{}' })).json()) as { secret: string }).secret;
    hooks.secrets = [secret];
  }, 120_000);
  afterAll(async () => {
    await t?.close();
    await hooks?.close();
    await llm?.close();
  });
  beforeEach(() => llm.reset());

  it('serves an agent card without a key that names the chat-turn skill and its JSON-RPC endpoint', async () => {
    const client = await connect(keyAlpha);
    const card = await client.getAgentCard();
    expect(card.name).toBe('Orion');
    expect(card.skills.map((s) => s.id)).toEqual(['chat-turn']);
    expect(card.capabilities?.streaming).toBe(true);
    expect(card.supportedInterfaces[0]).toMatchObject({ url: `${t.url}/a2a`, protocolBinding: 'JSONRPC' });
    expect((await fetch(`${t.url}/.well-known/agent-card.json`)).status).toBe(200);
    // the endpoint itself needs a key
    expect((await fetch(`${t.url}/a2a`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })).status).toBe(401);
  });

  it('streams a task to its answer: the task first, the answer artifact in pieces, tool steps, then completed; tasks/get and the run agree', async () => {
    const client = await connect(keyAlpha);
    llm.enqueue(...toolThenAnswer());
    const rs = await collect(client.sendMessageStream(sendParams(userMessage('What is in the guides folder?'))));
    const taskId = taskIdOf(rs);
    expect(finalState(rs)).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(streamedAnswer(rs)).toBe(ANSWER);
    const steps = rs.flatMap((r) => (r.payload?.$case === 'statusUpdate' && r.payload.value.status?.state === TaskState.TASK_STATE_WORKING ? [r.payload.value.status.message] : []));
    expect(JSON.stringify(steps)).toMatch(/list_files/);

    const task = await client.getTask({ tenant: '', id: taskId, historyLength: undefined });
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(textOf(task, 'answer')).toBe(ANSWER);
    const run = (await (await api(`/api/chat/runs/${taskId}`)).json()) as { status: string; conversationId: string };
    expect(run.status).toBe('completed');
    expect(task.contextId).toBe(run.conversationId);

    // the same contextId continues the conversation
    llm.enqueue(respond.turn([{ text: 'Two files.' }]));
    const next = await client.sendMessage(sendParams(userMessage('How many?', task.contextId)));
    if (!('status' in next)) throw new Error('message/send answered with a message, not a task');
    expect(next.contextId).toBe(task.contextId);
    expect(textOf(next, 'answer')).toBe('Two files.');
    const body = JSON.stringify(llm.chatRequests.at(-1)!.body);
    expect(body).toContain('What is in the guides folder?');
  });

  it('tasks/cancel cancels the Orion run of a streaming task and aborts its model request', async () => {
    const client = await connect(keyAlpha);
    llm.enqueue(respond.turn([{ text: 'Starting ' }, { text: 'a long ' }, { text: 'answer' }], { faults: { stallAfter: 2 } }));
    const stream = client.sendMessageStream(sendParams(userMessage('Write a long answer')));
    const seen: StreamResponse[] = [];
    let cancelled: Task | undefined;
    for await (const r of stream) {
      seen.push(r);
      if (r.payload?.$case === 'artifactUpdate' && !cancelled) cancelled = await client.cancelTask({ tenant: '', id: taskIdOf(seen), metadata: undefined });
    }
    expect(cancelled?.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    expect(finalState(seen)).toBe(TaskState.TASK_STATE_CANCELED);
    const run = (await (await api(`/api/chat/runs/${taskIdOf(seen)}`)).json()) as { status: string };
    expect(run.status).toBe('cancelled');
    await waitFor(() => llm.chatRequests[0].closedEarlyAt !== undefined);
    // an ended task cannot be cancelled again
    await expect(client.cancelTask({ tenant: '', id: taskIdOf(seen), metadata: undefined })).rejects.toThrow(/ended|cancel/i);
  });

  it('a call that needs approval puts the task in input-required; once decided on Orion’s route, resubscribe streams it to its answer', async () => {
    const client = await connect(keyAlpha);
    llm.enqueue(respond.turn([{ toolCall: { name: 'read_file', args: { path: 'guides/install.md' }, id: 'r1' } }]), respond.turn([{ text: 'It says: Install.' }]));
    const asked = await client.sendMessage(sendParams(userMessage('Read the install guide')));
    if (!('status' in asked)) throw new Error('message/send answered with a message, not a task');
    expect(asked.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    const waiting = asked.status?.message?.parts.find((p) => p.content?.$case === 'data')?.content;
    if (waiting?.$case !== 'data') throw new Error('no approval data in the status message');
    expect(waiting.value).toMatchObject({ tool: 'read_file', arguments: { path: 'guides/install.md' } });
    expect(llm.chatRequests).toHaveLength(1);

    const decided = await api(`/api/chat/runs/${asked.id}/approvals/${waiting.value.approvalId}`, { method: 'POST', body: JSON.stringify({ decision: 'approve' }) });
    expect(decided.status).toBe(200);
    const rest = await collect(client.resubscribeTask({ tenant: '', id: asked.id }));
    expect(finalState(rest)).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(streamedAnswer(rest)).toBe('It says: Install.');
  });

  it("a message's push notification config gets the task's end as Orion's signed webhook; a token is refused by name", async () => {
    const client = await connect(keyAlpha);
    llm.enqueue(respond.turn([{ text: 'Pushed.' }]));
    const config = { tenant: '', id: '', taskId: '', url: hooks.url('/a2a-push'), token: '', authentication: undefined };
    const task = await client.sendMessage({ ...sendParams(userMessage('Tell me when done')), configuration: { acceptedOutputModes: [], taskPushNotificationConfig: config, historyLength: undefined, returnImmediately: false } as never });
    if (!('status' in task)) throw new Error('message/send answered with a message, not a task');
    const pushed = await waitFor(() => hooks.about(task.id)[0]);
    expect(pushed.verified).toBe(true);
    expect(pushed.payload).toMatchObject({ type: 'run.completed', requestId: task.id, conversationId: task.contextId, answer: 'Pushed.' });
    await expect(
      client.sendMessage({ ...sendParams(userMessage('again')), configuration: { acceptedOutputModes: [], taskPushNotificationConfig: { ...config, token: 'secret-token' }, historyLength: undefined, returnImmediately: false } as never }),
    ).rejects.toThrow(/taskPushNotificationConfig\.token/);
  });

  it("another project's key gets nothing of this one's tasks", async () => {
    const alpha = await connect(keyAlpha);
    llm.enqueue(respond.turn([{ text: 'Hello.' }]));
    const own = await alpha.sendMessage(sendParams(userMessage('hi')));
    if (!('status' in own)) throw new Error('message/send answered with a message, not a task');
    const beta = await connect(keyBeta);
    await expect(beta.getTask({ tenant: '', id: own.id, historyLength: undefined })).rejects.toThrow(/not found/i);
    await expect(beta.cancelTask({ tenant: '', id: own.id, metadata: undefined })).rejects.toThrow(/not found/i);
    await expect(collect(beta.resubscribeTask({ tenant: '', id: own.id }))).rejects.toThrow(/not found/i);
    expect(llm.chatRequests).toHaveLength(1);
  });

  it('refuses a message without text, and a contextId that is no conversation, by name, before any model call', async () => {
    const client = await connect(keyAlpha);
    const empty = { ...userMessage(''), parts: [] };
    await expect(client.sendMessage(sendParams(empty))).rejects.toThrow(/message\.parts/);
    await expect(client.sendMessage(sendParams(userMessage('hi', 'not-a-uuid')))).rejects.toThrow(/contextId/);
    // a UUID that names no conversation starts none: the same answer as another project's
    await expect(client.sendMessage(sendParams(userMessage('hi', randomUUID())))).rejects.toThrow(/contextId: no conversation/);
    expect(llm.chatRequests).toHaveLength(0);
  });
});
