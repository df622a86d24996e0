import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { StreamResponse, Task } from '@a2a-js/sdk';
import { DefaultChatTransport, readUIMessageStream, type UIMessage, type UIMessageChunk } from 'ai';
import type { Client } from 'pg';
import type { Instance } from '../faults/harness';
import type { TestApp } from '../support/app';
import { createTestDatabase, describeOnPostgres } from '../support/db';
import { answerFrames, modelEnv, onBody, openAiFrame, serveModel, toolCallFrames } from '../support/openai-frames';
import { buildService, killA, reviveA, startTwoInstances, stopTwoInstances } from '../support/two-instances';
import { waitFor } from '../support/wait-for';
import { a2aClient } from '../support/a2a-client';

/**
 * Issue 44 on the AI SDK UI message stream: a chat whose instance (A, killed with SIGKILL while
 * the model streams) died mid-answer is continued by B, and the page resumes the chat on B
 * (`resumeStream()`, GET /api/chat/ui/:chatId/stream). The replay is read by the `ai` package's
 * own transport and reader, as `useChat` reads it: one `start`, the continued answer once (not
 * the fragment A streamed before it died), the tool call once in its final state, one `finish`.
 * The A2A edge's resubscribe and tasks/get, read by `@a2a-js/sdk`'s client, likewise.
 */
const LEASE_MS = 3000;
const ANSWER = ['The', 'page', 'is', 'slow.'];
const FRAGMENT = 'The page ';

const userMessage = (text: string): UIMessage => ({ id: 'u1', role: 'user', parts: [{ type: 'text', text }] });
/** A has streamed the fragment of its answer that B's continuation supersedes: the moment to kill A. */
const fragmentStreamed = (seen: UIMessageChunk[]) =>
  seen
    .filter((c) => c.type === 'text-delta')
    .map((c) => (c as { delta: string }).delta)
    .join('')
    .includes(FRAGMENT);
const textOf = (m: UIMessage) => m.parts.flatMap((p) => (p.type === 'text' ? [p.text] : [])).join('');

describeOnPostgres('two instances and a SIGKILL need PostgreSQL', 'AI SDK UI stream: resuming a chat whose run another instance took over', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let model: Server;
  let port = 0;
  let pg: Client;
  let a: Instance;
  let b: TestApp;
  let env: Record<string, string>;
  let pages = 0;
  let answers = 0;
  /** where A is cut: while it streams the answer after the tool, or while its tool waits for the page */
  let cut: 'answer' | 'tool' = 'answer';
  /** B's answer waits on it: the chat is resumed while the continued run is still live */
  let release: () => void = () => undefined;
  let released = Promise.resolve();

  /** The first model call asks for fetch_page; A's answer streams a fragment and hangs; B's answer waits for the test, then answers whole. */
  function handle(req: IncomingMessage, res: ServerResponse): void {
    onBody(req, () => {
      if (req.url?.startsWith('/page')) {
        // the first fetch never answers when A is cut while its tool runs
        if (++pages === 1 && cut === 'tool') return;
        res.writeHead(200, { 'content-type': 'text/html' }).end('<html><head><title>page</title></head><body><p>a slow page</p></body></html>');
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      if (pages === 0) {
        res.end(toolCallFrames('call_1', 'fetch_page', { url: `http://127.0.0.1:${port}/page` }));
        return;
      }
      if (++answers === 1 && cut === 'answer') {
        res.write(openAiFrame({ content: 'The ' }));
        res.write(openAiFrame({ content: 'page ' }));
        return; // never ends: A is killed while it streams
      }
      void released.then(() => res.end(answerFrames(ANSWER)));
    });
  }

  beforeAll(async () => {
    buildService();
    db = await createTestDatabase();
    ({ server: model, port } = await serveModel(handle));
    env = { DATABASE_URL: db.url, ...modelEnv(port), RUN_LEASE_MS: String(LEASE_MS), MCP_CONFIG: '' };
    ({ a, b, pg } = await startTwoInstances(env, db.url));
  }, 700_000);

  beforeEach(async () => {
    pages = 0;
    answers = 0;
    released = new Promise<void>((r) => (release = r));
    a = await reviveA(a, env);
  }, 120_000);

  afterAll(async () => {
    release();
    await stopTwoInstances({ a, b, pg });
    model?.closeAllConnections();
    model?.close();
    await db?.drop();
  });

  /** Sends the chat to A, reads its stream until `killWhen`, kills A; returns the run's id. */
  async function sentToAThenKilled(chatId: string, killWhen: (seen: UIMessageChunk[]) => boolean, headers?: Record<string, string>): Promise<string> {
    const toA = new DefaultChatTransport<UIMessage>({ api: `${a.url}/api/chat/ui`, headers });
    const stream = await toA.sendMessages({ chatId, messages: [userMessage('Fetch the page')], trigger: 'submit-message', messageId: undefined, abortSignal: undefined, body: { options: { debugShowToolResults: true } } });
    const reader = stream.getReader();
    const seen: UIMessageChunk[] = [];
    while (!killWhen(seen)) {
      const { value, done } = await reader.read();
      if (done) throw new Error('A ended the stream before the point where it is killed');
      seen.push(value);
    }
    await killA(a);
    await reader.cancel().catch(() => undefined);
    const start = seen.find((c) => c.type === 'start') as { messageId: string };
    return start.messageId;
  }

  /** B's continuation has stored its start: what A streamed of the phase cut short is superseded. */
  const takenOver = (requestId: string) =>
    waitFor(async () => (await pg.query(`SELECT data FROM run_events WHERE request_id = $1 AND type = 'start' AND (data->>'takeover')::boolean`, [requestId])).rows[0]?.data as Record<string, unknown> | undefined, {
      what: 'the takeover start',
      timeoutMs: LEASE_MS * 10,
    });

  /** The chat resumed on B as `useChat` does: every part the AI SDK parsed, and the message its reader built. */
  async function resumedOnB(chatId: string): Promise<{ chunks: UIMessageChunk[]; message: UIMessage }> {
    const toB = new DefaultChatTransport<UIMessage>({ api: `${b.url}/api/chat/ui` });
    const resumed = await toB.reconnectToStream({ chatId });
    expect(resumed).not.toBeNull();
    release();
    // the parts as parsed, copied as they come (the reader updates data parts in place)
    const chunks: UIMessageChunk[] = [];
    for await (const c of resumed!) chunks.push(structuredClone(c));
    let message: UIMessage | undefined;
    const again = new ReadableStream<UIMessageChunk>({
      start(c) {
        for (const chunk of chunks) c.enqueue(structuredClone(chunk));
        c.close();
      },
    });
    for await (const m of readUIMessageStream({ stream: again, terminateOnError: true })) message = m;
    return { chunks, message: message! };
  }

  const storedAnswer = async (requestId: string) =>
    (await pg.query<{ content: string }>(`SELECT content FROM chat_messages WHERE request_id = $1 AND role = 'assistant'`, [requestId])).rows.map((r) => r.content);
  const toolParts = (m: UIMessage) => m.parts.filter((p) => p.type === 'dynamic-tool') as unknown as Array<{ toolCallId: string; state: string; output?: unknown }>;

  it('A killed mid-answer: the resumed message is the continued answer once, without the fragment A streamed', async () => {
    cut = 'answer';
    const chatId = 'chat-taken-over-mid-answer';
    const requestId = await sentToAThenKilled(chatId, fragmentStreamed);
    expect(await takenOver(requestId)).toMatchObject({ resumed: true, supersedesFromSeq: expect.any(Number) });

    const { chunks, message } = await resumedOnB(chatId);
    expect(chunks.filter((c) => c.type === 'start')).toHaveLength(1);
    expect(chunks.filter((c) => c.type === 'finish')).toHaveLength(1);
    expect(chunks.at(-1)).toMatchObject({ type: 'finish', finishReason: 'stop' });
    const [stored] = await storedAnswer(requestId);
    expect(stored).toContain(ANSWER.join(' '));
    // the page shows what the conversation stored, the continued answer, once
    expect(textOf(message)).toBe(stored);
    expect(textOf(message).split('The page').length).toBe(2);
    expect(message.id).toBe(requestId);
    expect(message.metadata).toMatchObject({ requestId, takeover: true, stopReason: 'final_answer' });
    // the tool ran on A before its checkpoint: its part is there once, with its output
    const tools = toolParts(message);
    expect(tools.map((p) => [p.toolCallId, p.state])).toEqual([['call_1', 'output-available']]);
    expect(JSON.stringify(tools[0].output)).toContain('a slow page');
    expect(pages).toBe(1);
  }, 120_000);

  it('A killed while its tool ran: the resumed message has the call once, ended by the run B made of it', async () => {
    cut = 'tool';
    const chatId = 'chat-taken-over-mid-tool';
    const requestId = await sentToAThenKilled(chatId, (seen) => seen.some((c) => c.type === 'data-tool-progress' && (c.data as { action: string }).action === 'calling') && pages === 1);
    await takenOver(requestId);

    const { chunks, message } = await resumedOnB(chatId);
    expect(chunks.filter((c) => c.type === 'start')).toHaveLength(1);
    expect(chunks.filter((c) => c.type === 'finish')).toHaveLength(1);
    // one call, run again by B (fetch_page only reads), its part ends with B's result
    expect(chunks.filter((c) => c.type === 'tool-input-available').map((c) => (c as { toolCallId: string }).toolCallId)).toEqual(['call_1']);
    const progress = chunks.filter((c) => c.type === 'data-tool-progress').map((c) => (c as unknown as { data: { action: string } }).data.action);
    expect(progress).toEqual(['calling', 'completed']);
    expect(toolParts(message).map((p) => [p.toolCallId, p.state])).toEqual([['call_1', 'output-available']]);
    expect(pages).toBe(2);
    expect(textOf(message)).toBe((await storedAnswer(requestId))[0]);
    expect(textOf(message)).toBe(ANSWER.join(' '));
  }, 120_000);

  it('A killed mid-answer: an A2A client resubscribing on B, and tasks/get, have the continued answer once', async () => {
    cut = 'answer';
    const requestId = await sentToAThenKilled('chat-taken-over-a2a', fragmentStreamed);
    await takenOver(requestId);
    const client = await a2aClient(b.url, 'no-key-needed');
    const responses: StreamResponse[] = [];
    const read = (async () => {
      for await (const r of client.resubscribeTask({ tenant: '', id: requestId })) responses.push(r);
    })();
    await waitFor(() => responses.length > 0, { what: 'the resubscription to start' });
    release();
    await read;
    const streamed = responses
      .flatMap((r) => (r.payload?.$case === 'artifactUpdate' && r.payload.value.artifact?.artifactId === 'answer' ? r.payload.value.artifact.parts : []))
      .map((p) => (p.content?.$case === 'text' ? p.content.value : ''))
      .join('');
    const [stored] = await storedAnswer(requestId);
    expect(streamed).toBe(stored);
    expect(streamed.split('The page').length).toBe(2);
    const task: Task = await client.getTask({ tenant: '', id: requestId, historyLength: undefined });
    const answer = task.artifacts.filter((a) => a.artifactId === 'answer').flatMap((a) => a.parts.map((p) => (p.content?.$case === 'text' ? p.content.value : ''))).join('');
    expect(answer).toBe(stored);
  }, 120_000);

  it('A killed mid-answer: the same send repeated on B (same Idempotency-Key) replays the continued answer once', async () => {
    cut = 'answer';
    const chatId = 'chat-taken-over-repeated';
    const headers = { 'Idempotency-Key': 'ui-repeat-after-takeover' };
    const requestId = await sentToAThenKilled(chatId, fragmentStreamed, headers);
    await takenOver(requestId);
    const toB = new DefaultChatTransport<UIMessage>({ api: `${b.url}/api/chat/ui`, headers });
    const repeated = await toB.sendMessages({ chatId, messages: [userMessage('Fetch the page')], trigger: 'submit-message', messageId: undefined, abortSignal: undefined, body: { options: { debugShowToolResults: true } } });
    release();
    let message: UIMessage | undefined;
    for await (const m of readUIMessageStream({ stream: repeated, terminateOnError: true })) message = m;
    const [stored] = await storedAnswer(requestId);
    expect(message!.id).toBe(requestId);
    expect(textOf(message!)).toBe(stored);
    expect(textOf(message!).split('The page').length).toBe(2);
  }, 120_000);
});
