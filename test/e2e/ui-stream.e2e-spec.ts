import { execFile } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { ServerResponse } from 'node:http';
import { DefaultChatTransport, readUIMessageStream, type UIMessage, type UIMessageChunk } from 'ai';
import { startApp, type TestApp } from '../support/app';
import { openAiSseFrames } from '../support/llm-wire';
import { ReplayServer, respond, type ScriptStep } from '../support/replay-server';
import { sse } from '../support/sse-client';
import { waitFor } from '../support/wait-for';
import { readmeExample } from '../support/readme-example';
import { conversationIdForChat } from '../../src/ui-stream/chat-id';

const QUESTION = 'Which files are in the project?';
const ANSWER = 'The project has README.md and notes.txt.';

/** The turn every test scripts: the model lists the project's files with Orion's list_files, then answers. */
const toolStep: ScriptStep[] = [{ text: 'Let me look. ' }, { toolCall: { name: 'list_files', args: { path: '.' }, id: 'call_ls' } }];
const answerStep: ScriptStep[] = [{ text: ANSWER }];
/** What both routes stream for it: the text of each model step, Orion's step separator between them. */
const FULL_ANSWER = `Let me look. \n\n${ANSWER}`;

const userMessage = (id: string, text: string): UIMessage => ({ id, role: 'user', parts: [{ type: 'text', text }] });
const textOf = (m: UIMessage) => m.parts.flatMap((p) => (p.type === 'text' ? [p.text] : [])).join('');
const post = (url: string, body: unknown) => fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

/** The last message the AI SDK's reader builds from a UI message stream. */
async function lastMessage(stream: ReadableStream<UIMessageChunk>): Promise<UIMessage> {
  let last: UIMessage | undefined;
  for await (const m of readUIMessageStream({ stream, terminateOnError: true })) last = m;
  return last!;
}

/**
 * A model response whose first `before` frames are sent at once and the rest once `gate` opens:
 * a run that is still live while the test reconnects to it or leaves it.
 */
function gated(steps: ScriptStep[], gate: Promise<void>, before = 1) {
  return respond.handler(async (_req, res: ServerResponse) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    const frames = openAiSseFrames(steps);
    for (const [i, f] of frames.entries()) {
      if (i === before) await gate;
      if (res.destroyed) return;
      res.write('data' in f ? `data: ${f.data}\n\n` : `: ${f.comment}\n\n`);
    }
    res.end();
  });
}

function opener(): { gate: Promise<void>; open: () => void } {
  let open!: () => void;
  const gate = new Promise<void>((r) => (open = r));
  return { gate, open };
}

/**
 * #34 item 2: the AI SDK's own clients (`DefaultChatTransport` + `readUIMessageStream`, the code
 * `useChat` runs) talk to a running Orion and get the turn the native route gives, tool steps run
 * by Orion included.
 */
describe('AI SDK UI message stream (POST /api/chat/ui, GET /api/chat/ui/:chatId/stream)', () => {
  let llm: ReplayServer;
  let t: TestApp;
  let transport: DefaultChatTransport<UIMessage>;
  const headers: Array<string | null> = [];

  beforeAll(async () => {
    llm = await ReplayServer.start();
    t = await startApp({ LLM_PROVIDER: 'openai', LLM_BASE_URL: llm.openAiBaseUrl, LLM_MODEL: 'scripted-model' });
    const project = join(t.workspace, 'default');
    mkdirSync(project, { recursive: true });
    writeFileSync(join(project, 'README.md'), '# Demo\n');
    writeFileSync(join(project, 'notes.txt'), 'notes\n');
    transport = new DefaultChatTransport({
      api: `${t.url}/api/chat/ui`,
      fetch: async (input, init) => {
        const res = await fetch(input, init);
        headers.push(res.headers.get('x-vercel-ai-ui-message-stream'));
        return res;
      },
    });
  }, 120_000);
  afterAll(async () => {
    await t?.close();
    await llm?.close();
  });
  beforeEach(() => {
    llm.reset();
    headers.length = 0;
  });

  const send = (chatId: string, messages: UIMessage[], extra: { body?: object; trigger?: 'submit-message' | 'regenerate-message'; abortSignal?: AbortSignal } = {}) =>
    transport.sendMessages({ chatId, messages, trigger: extra.trigger ?? 'submit-message', messageId: undefined, abortSignal: extra.abortSignal, body: extra.body });
  const conversations = async () => (await (await fetch(`${t.url}/api/chat/conversations`)).json()) as Array<{ id: string }>;
  const storedMessages = async (conversationId: string) => (await (await fetch(`${t.url}/api/chat/conversations/${conversationId}/messages`)).json()) as Array<{ role: string; content: string; requestId: string }>;
  /** What the model was told by Orion's tool step: the tool message of its second request. */
  const toolResultSent = (requestIndex: number) => {
    const msgs = llm.chatRequests[requestIndex].body.messages as Array<{ role: string; content: string }>;
    return msgs.filter((m) => m.role === 'tool').map((m) => m.content).join('\n');
  };

  it('gives the answer the native route gives for the same turn, with list_files run by Orion', async () => {
    llm.enqueue(respond.turn(toolStep), respond.turn(answerStep));
    const native = await sse(`${t.url}/api/chat/messages`, { body: { content: QUESTION }, timeoutMs: 20_000 });
    const nativeDone = native.events.at(-1)!;
    expect(nativeDone.event).toBe('done');
    const nativeToolResult = toolResultSent(1);
    expect(nativeToolResult).toContain('README.md');

    llm.reset();
    llm.enqueue(respond.turn(toolStep), respond.turn(answerStep));
    const chatId = 'chat-same-answer';
    const message = await lastMessage(await send(chatId, [userMessage('u1', QUESTION)]));

    expect(headers).toEqual(['v1']);
    expect(textOf(message)).toBe(nativeDone.data.fullContent);
    expect(textOf(message)).toBe(FULL_ANSWER);
    // Orion ran the tool: the model got the same listing on both routes
    expect(toolResultSent(1)).toBe(nativeToolResult);
    const tool = message.parts.find((p) => p.type === 'dynamic-tool');
    // raw output is not shown without debugShowToolResults: the call stays at its input
    expect(tool).toMatchObject({ toolName: 'list_files', toolCallId: 'call_ls', state: 'input-available', input: { path: '.' }, providerExecuted: true });
    const progress = message.parts.find((p) => p.type === 'data-tool-progress') as { data: Record<string, unknown> };
    expect(progress.data).toMatchObject({ tool: 'list_files', callId: 'call_ls', action: 'completed', outcome: 'success', isError: false });
    expect(message.parts.filter((p) => p.type === 'data-phase').map((p) => (p as { data: { phase: string } }).data.phase)).toEqual(['action_phase', 'tool_phase', 'action_phase']);
    const meta = message.metadata as Record<string, unknown>;
    expect(meta).toMatchObject({ stopReason: 'final_answer', conversationId: conversationIdForChat('default', chatId), protocol: 'unified' });
    expect(message.id).toBe(meta.requestId);

    // the answer is stored in the chat's conversation, as the native route stores its own
    const stored = await storedMessages(meta.conversationId as string);
    expect(stored.map((m) => [m.role, m.content])).toEqual([
      ['user', QUESTION],
      ['assistant', nativeDone.data.fullContent],
    ]);
  });

  it('the next message of the same chat continues its conversation (stored history), and regenerate asks again', async () => {
    const chatId = 'chat-continues';
    llm.enqueue(respond.turn([{ text: 'Hello.' }]), respond.turn([{ text: 'Your first message was a greeting.' }]), respond.turn([{ text: 'It was a greeting.' }]));
    const first = await lastMessage(await send(chatId, [userMessage('u1', 'Hi')]));
    const history = [userMessage('u1', 'Hi'), first, userMessage('u2', 'What did I say first?')];
    const second = await lastMessage(await send(chatId, history));
    expect(textOf(second)).toBe('Your first message was a greeting.');
    const told = (llm.chatRequests[1].body.messages as Array<{ role: string; content: string }>).filter((m) => m.role !== 'system').map((m) => [m.role, m.content]);
    expect(told).toEqual([
      ['user', 'Hi'],
      ['assistant', 'Hello.'],
      ['user', 'What did I say first?'],
    ]);
    // regenerate: the transport sends the chat up to the user message; that message runs again
    const again = await lastMessage(await send(chatId, history, { trigger: 'regenerate-message' }));
    expect(textOf(again)).toBe('It was a greeting.');
    expect(llm.chatRequests[2].body.messages.at(-1)).toMatchObject({ role: 'user', content: 'What did I say first?' });
    const conversationId = conversationIdForChat('default', chatId);
    expect((await storedMessages(conversationId)).filter((m) => m.role === 'assistant').map((m) => m.content)).toEqual(['Hello.', 'Your first message was a greeting.', 'It was a greeting.']);
    expect((await conversations()).filter((c) => c.id === conversationId)).toHaveLength(1);
  });

  it('shows tool output with options.debugShowToolResults (tool-output-available), as the native stream does', async () => {
    llm.enqueue(respond.turn(toolStep), respond.turn(answerStep));
    const message = await lastMessage(await send('chat-debug', [userMessage('u1', QUESTION)], { body: { options: { debugShowToolResults: true } } }));
    const tool = message.parts.find((p) => p.type === 'dynamic-tool') as { state: string; output: unknown };
    expect(tool.state).toBe('output-available');
    expect(JSON.stringify(tool.output)).toContain('README.md');
    expect(JSON.stringify(tool.output)).toContain('notes.txt');
  });

  it('resume: 204 without an active run; during a run, the whole message replayed and followed to its end', async () => {
    expect(await transport.reconnectToStream({ chatId: 'chat-never-seen' })).toBeNull();
    const chatId = 'chat-resume';
    const { gate, open } = opener();
    llm.enqueue(respond.turn(toolStep), gated(answerStep, gate));
    const live = await send(chatId, [userMessage('u1', QUESTION)]);
    const reader = live.getReader();
    const seen: UIMessageChunk[] = [];
    // read the live stream until the answer's model step has started (its model response waits on the gate)
    const answering = (c: UIMessageChunk) => c.type === 'data-phase' && (c.data as { phaseIndex: number; status: string }).phaseIndex === 3;
    while (!seen.some(answering)) {
      const { value, done } = await reader.read();
      if (done) throw new Error('the live stream ended early');
      seen.push(value);
    }
    const resumed = await transport.reconnectToStream({ chatId });
    expect(resumed).not.toBeNull();
    open();
    const [fromResume] = await Promise.all([
      lastMessage(resumed!),
      (async () => {
        for (let r = await reader.read(); !r.done; r = await reader.read()) seen.push(r.value);
      })(),
    ]);
    expect(textOf(fromResume)).toBe(FULL_ANSWER);
    expect(fromResume.parts.find((p) => p.type === 'dynamic-tool')).toMatchObject({ toolName: 'list_files', state: 'input-available' });
    expect((fromResume.metadata as Record<string, unknown>).stopReason).toBe('final_answer');
    // the live stream got the same parts the replay rebuilt
    expect(seen.filter((c) => c.type === 'text-delta').map((c) => (c as { delta: string }).delta).join('')).toBe(textOf(fromResume));
    // the run has ended: nothing to resume
    await waitFor(async () => (await fetch(`${t.url}/api/chat/ui/${chatId}/stream`)).status === 204);
  });

  it('a client that leaves cancels the run, as on the chat routes', async () => {
    const { gate, open } = opener();
    llm.enqueue(gated([{ text: 'Thinking' }, { text: ' more' }], gate));
    const abort = new AbortController();
    const stream = await send('chat-leaves', [userMessage('u1', 'Take your time')], { abortSignal: abort.signal });
    const reader = stream.getReader();
    let requestId: string | undefined;
    while (!requestId) {
      const { value } = await reader.read();
      if (value?.type === 'start') requestId = value.messageId;
    }
    abort.abort();
    await reader.cancel().catch(() => undefined);
    try {
      const run = await waitFor(async () => {
        const r = (await (await fetch(`${t.url}/api/chat/runs/${requestId}`)).json()) as { status: string };
        return r.status === 'cancelled' ? r : undefined;
      });
      expect(run.status).toBe('cancelled');
    } finally {
      open();
    }
  });

  it('refuses a body it cannot run with a clear 400 and stores nothing', async () => {
    const before = (await conversations()).length;
    const user = { id: 'u1', role: 'user', parts: [{ type: 'text', text: 'Hi' }] };
    const cases: Array<[string, unknown, string]> = [
      ['last message not the user\'s', { id: 'c1', messages: [user, { id: 'a1', role: 'assistant', parts: [{ type: 'text', text: 'Hello' }] }], trigger: 'submit-message' }, "the last of messages must be the user's message"],
      ['a file part', { id: 'c1', messages: [{ ...user, parts: [{ type: 'text', text: 'see' }, { type: 'file', mediaType: 'image/png', url: 'data:,' }] }] }, 'may only have text parts'],
      ['no text', { id: 'c1', messages: [{ ...user, parts: [{ type: 'text', text: '  ' }] }] }, 'has no text'],
      ['no messages', { id: 'c1', messages: [] }, 'messages must not be empty'],
      ['unknown trigger', { id: 'c1', messages: [user], trigger: 'resume' }, 'trigger must be'],
      ['a chat id with a slash', { id: 'a/b', messages: [user] }, 'id must be 1-200 characters'],
      ['an unknown field', { id: 'c1', messages: [user], temperature: 2 }, 'temperature is not allowed (unknown field; accepted: id, messages, trigger, messageId, projectId, mode, options)'],
      ['a bad role', { id: 'c1', messages: [{ ...user, role: 'tool' }] }, 'role must be'],
      ['too long', { id: 'c1', messages: [{ ...user, parts: [{ type: 'text', text: 'x'.repeat(32_001) }] }] }, 'at most 32000 characters'],
    ];
    for (const [what, body, says] of cases) {
      const res = await post(`${t.url}/api/chat/ui`, body);
      expect([what, res.status]).toEqual([what, 400]);
      expect([what, JSON.stringify(await res.json())]).toEqual([what, expect.stringContaining(says)]);
    }
    expect((await conversations()).length).toBe(before);
    expect(llm.chatRequests).toHaveLength(0);
  });

  it('a UUID chat id of another project\'s conversation is a 404 there, and its resume a 204', async () => {
    llm.enqueue(respond.turn([{ text: 'Hello.' }]));
    const chatId = '3f2b8f4e-8d1c-4c7a-9a57-0b6f5e2d1c90';
    await lastMessage(await send(chatId, [userMessage('u1', 'Hi')]));
    expect((await storedMessages(chatId)).length).toBe(2);
    const res = await post(`${t.url}/api/chat/ui`, { id: chatId, projectId: 'other', messages: [userMessage('u2', 'Hi again')] });
    expect(res.status).toBe(404);
    expect((await res.json()).error).toBe('conversation_not_found');
    expect((await fetch(`${t.url}/api/chat/ui/${chatId}/stream?projectId=other`)).status).toBe(204);
    expect((await storedMessages(chatId)).length).toBe(2);
  });

  /** The README's "Clients" example for the AI SDK (Node), run as written against this server. */
  it('runs the README example verbatim', async () => {
    const example = readmeExample('ai-sdk');
    expect(example.trim().split('\n')).toHaveLength(5);
    llm.enqueue(respond.turn(toolStep), respond.turn(answerStep));
    // inside the repository, so the file finds the `ai` package as an application would
    const dir = join(__dirname, '..', '..', 'test-output', 'ui-stream-example');
    mkdirSync(dir, { recursive: true });
    const file = join(dir, 'example.mjs');
    writeFileSync(file, example);
    const { stdout } = await promisify(execFile)(process.execPath, [file], { timeout: 20_000, env: { ...process.env, ORION_URL: t.url } });
    expect(stdout).toBe(`${FULL_ANSWER}\n`);
  });
});

/**
 * Approvals on /api/chat/ui read by the AI SDK's own reader: the tool part asks for approval,
 * the decision is given on Orion's approval route, and the part ends in the state a `useChat`
 * page should show (not still asking once the call has run or was denied).
 */
describe('AI SDK UI message stream: a call that waits for approval', () => {
  let llm: ReplayServer;
  let t: TestApp;
  let transport: DefaultChatTransport<UIMessage>;

  beforeAll(async () => {
    llm = await ReplayServer.start();
    t = await startApp({ LLM_PROVIDER: 'openai', LLM_BASE_URL: llm.openAiBaseUrl, LLM_MODEL: 'scripted-model', TOOLS_REQUIRE_APPROVAL: 'list_files' });
    const project = join(t.workspace, 'default');
    mkdirSync(project, { recursive: true });
    writeFileSync(join(project, 'README.md'), '# Demo\n');
    transport = new DefaultChatTransport({ api: `${t.url}/api/chat/ui` });
  }, 120_000);
  afterAll(async () => {
    await t?.close();
    await llm?.close();
  });
  beforeEach(() => llm.reset());

  type ToolPart = { type: string; toolCallId: string; state: string; output?: unknown; approval?: { id: string } };
  const toolParts = (m: UIMessage) => m.parts.filter((p) => p.type === 'dynamic-tool') as unknown as ToolPart[];

  /** Sends the question, decides the approval on Orion's route when the tool part asks for it, and returns the last message and the states the part went through. */
  async function decideOnce(chatId: string, decision: 'approve' | 'deny') {
    const stream = await transport.sendMessages({ chatId, messages: [userMessage('u1', QUESTION)], trigger: 'submit-message', messageId: undefined, abortSignal: undefined });
    const states: string[] = [];
    let last: UIMessage | undefined;
    for await (const m of readUIMessageStream({ stream, terminateOnError: true })) {
      last = m;
      const part = toolParts(m)[0];
      if (part && states.at(-1) !== part.state) {
        states.push(part.state);
        if (part.state === 'approval-requested') {
          const requestId = (m.metadata as { requestId: string }).requestId;
          const res = await post(`${t.url}/api/chat/runs/${requestId}/approvals/${part.approval!.id}`, { decision });
          expect(res.status).toBe(200);
        }
      }
    }
    return { message: last!, states };
  }

  it('approved: the part leaves approval-requested when decided and ends output-available once the call ran (no output shown)', async () => {
    llm.enqueue(respond.turn(toolStep), respond.turn(answerStep));
    const { message, states } = await decideOnce('approve-chat', 'approve');
    expect(states).toEqual(['input-available', 'approval-requested', 'input-available', 'output-available']);
    const [part] = toolParts(message);
    expect(part).toMatchObject({ toolCallId: 'call_ls', state: 'output-available', output: { status: 'completed' } });
    expect(textOf(message)).toBe(FULL_ANSWER);
  });

  it('denied: the part ends output-denied, not output-error', async () => {
    llm.enqueue(respond.turn(toolStep), respond.turn([{ text: 'You declined, so I did not look.' }]));
    const { message, states } = await decideOnce('deny-chat', 'deny');
    expect(states).toEqual(['input-available', 'approval-requested', 'output-denied']);
    expect(toolParts(message)[0]).toMatchObject({ toolCallId: 'call_ls', state: 'output-denied' });
  });
});

