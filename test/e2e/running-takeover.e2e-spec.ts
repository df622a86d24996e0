import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Client } from 'pg';
import { readSse, type Instance, type Received } from '../faults/harness';
import type { TestApp } from '../support/app';
import { createTestDatabase, describeOnPostgres } from '../support/db';
import { answerFrames, modelEnv, onBody, openAiFrame, serveModel, toolCallFrames } from '../support/openai-frames';
import { sse } from '../support/sse-client';
import { buildService, killA, reviveA, startTwoInstances, stopTwoInstances } from '../support/two-instances';
import { waitFor } from '../support/wait-for';

/**
 * Issue 44: a turn whose instance dies mid-phase is continued by another instance from its last
 * checkpoint (two-stage: its tool phase's; unified: its last completed step's, or phase 0 before
 * the first model call). A is the built service in a child process (killed with SIGKILL while the
 * model streams), B an app in this process on the same PostgreSQL. B's sweeper takes the run
 * over; its `start` supersedes what A streamed of the phase cut short, and the client that
 * reconnects to B with Last-Event-ID reads one gap-free sequence ending in one `done` with the
 * whole answer; the stored answer has no fragment; the tool that finished before the kill
 * (counted at the page it fetches) is not run again. A unified turn cut while its tool ran goes
 * on from the checkpoint taken before the step's calls: fetch_page only reads, so it runs again
 * (a tool with a side effect is answered as cut off: the fault suite's continuation cases).
 */
const LEASE_MS = 3000;
const ANSWER = ['The', 'page', 'is', 'slow.'];

describeOnPostgres('two instances and a SIGKILL need PostgreSQL', 'a running turn whose instance died is continued by another', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let model: Server;
  let port = 0;
  let pg: Client;
  let a: Instance;
  let b: TestApp;
  let pages = 0;
  let answers = 0;
  let calls = 0;
  /** where A is cut: the answer after the tool (default), the first model call, or the page the tool fetches */
  let cut: 'answer' | 'first-call' | 'tool' = 'answer';

  /** The first model call asks for fetch_page; the first answer call sends two words and hangs (A is killed then); later ones answer. */
  function handle(req: IncomingMessage, res: ServerResponse): void {
    onBody(req, () => {
      if (req.url?.startsWith('/page')) {
        // never answers: the instance is killed while its tool waits for the page
        if (++pages === 1 && cut === 'tool') return;
        res.writeHead(200, { 'content-type': 'text/html' }).end('<html><head><title>page</title></head><body><p>a slow page</p></body></html>');
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      if (++calls === 1 && cut === 'first-call') {
        res.write(openAiFrame({ content: 'Let me ' }));
        return; // never ends: the instance is killed before the first step completed
      }
      if (pages === 0) {
        res.end(toolCallFrames('call_1', 'fetch_page', { url: `http://127.0.0.1:${port}/page` }));
        return;
      }
      if (++answers === 1 && cut === 'answer') {
        for (const w of ANSWER.slice(0, 2)) res.write(openAiFrame({ content: `${w} ` }));
        return; // never ends: the instance is killed while it streams
      }
      res.end(answerFrames(ANSWER));
    });
  }

  beforeAll(async () => {
    buildService();
    db = await createTestDatabase();
    ({ server: model, port } = await serveModel(handle));
    env = {
      DATABASE_URL: db.url,
      ...modelEnv(port),
      TWO_STAGE_ENABLED: 'true',
      RUN_LEASE_MS: String(LEASE_MS),
      MCP_CONFIG: '',
    };
    ({ a, b, pg } = await startTwoInstances(env, db.url));
  }, 700_000);

  let env: Record<string, string>;
  beforeEach(async () => {
    pages = 0;
    answers = 0;
    calls = 0;
    cut = 'answer';
    a = await reviveA(a, env);
  }, 120_000);

  afterAll(async () => {
    await stopTwoInstances({ a, b, pg });
    model?.closeAllConnections();
    model?.close();
    await db?.drop();
  });

  /** Starts a turn on A, kills A once `killWhen` saw what it waits for, and reads the rest from B after the last event A sent. */
  async function killedAndReconnected(route: string, killWhen: (got: Received[]) => boolean) {
    const got: Received[] = [];
    const stream = readSse(`${a.url}${route}`, { content: 'Fetch the page' }, (e) => got.push(e));
    await waitFor(() => killWhen(got), { what: 'the point where A is killed', timeoutMs: 30_000 });
    const requestId = String(got[0].data.requestId);
    const lastId = got.at(-1)!.id;
    await killA(a);
    await stream;
    // the client reconnects to B after the last event it read
    const again = await sse(`${b.url}/api/chat/runs/${requestId}/events`, { headers: { 'last-event-id': String(lastId) }, timeoutMs: LEASE_MS * 20 });
    const all = [...got.map((e) => ({ id: e.id, event: e.event, data: e.data })), ...again.events.map((e) => ({ id: Number(e.id), event: e.event, data: e.data }))];
    // one gap-free sequence, one done
    expect(all.map((e) => e.id)).toEqual(all.map((_, i) => i + 1));
    expect(all.filter((e) => e.event === 'done')).toHaveLength(1);
    return { requestId, again, all };
  }

  /** A streamed part of the answer after the tool: the fragment B's continuation supersedes. */
  const fragmentSent = (got: Received[]) => got.some((e) => e.event === 'chunk' && String(e.data.content).includes('page'));

  it.each([
    ['two-stage', '/api/chat/messages_two_stage'],
    ['unified', '/api/chat/messages'],
  ])('%s: A killed mid-phase: B continues from the checkpoint; one done, the answer once, the tool not run again, one gap-free stream on reconnect', async (route, path) => {
    const { requestId, again, all } = await killedAndReconnected(path, fragmentSent);
    const start = again.events.find((e) => e.event === 'start');
    expect(start?.data).toMatchObject({ takeover: true, resumed: true });
    const from = Number(start!.data.supersedesFromSeq);
    // what a client keeps: the chunks before the cut and after the continuation's start
    const kept = all.filter((e) => e.event === 'chunk' && (e.id < from || e.id > Number(start!.id)));
    const done = all.at(-1)!;
    expect(done).toMatchObject({ event: 'done', data: { stopReason: 'final_answer' } });
    expect(kept.map((e) => String(e.data.content)).join('')).toBe(String(done.data.fullContent));
    expect(String(done.data.fullContent)).toContain(ANSWER.join(' '));
    expect(String(done.data.fullContent).split('The page').length).toBe(2);

    const message = (await pg.query<{ content: string }>(`SELECT content FROM chat_messages WHERE request_id = $1 AND role = 'assistant'`, [requestId])).rows;
    expect(message.map((m) => m.content)).toEqual([done.data.fullContent]);
    expect(pages).toBe(1);
    const run = (await pg.query('SELECT status, takeovers FROM runs WHERE request_id = $1', [requestId])).rows[0];
    expect(run).toMatchObject({ status: 'completed', takeovers: 1 });
    const traced = await waitFor(async () => (await pg.query(`SELECT details FROM trace_events WHERE request_id = $1 AND type = 'run_taken_over'`, [requestId])).rows[0], { what: 'run_taken_over', timeoutMs: 10_000 });
    expect(traced.details).toMatchObject({ outcome: 'continued', route, checkpoint: expect.any(Number), fromInstance: expect.any(String) });
    // the reloaded page's conversation carries the answer once
    const res = await fetch(`${b.url}/api/chat/runs/${requestId}`);
    expect(res.status).toBe(200);
  }, 120_000);

  it('unified: A killed before its first step completed: B starts the turn again from phase 0; the fragment is superseded, the tool runs once', async () => {
    cut = 'first-call';
    // A is killed while its first model call streams, before any tool ran
    const { requestId, again, all } = await killedAndReconnected('/api/chat/messages', (got) => got.some((e) => e.event === 'chunk') && pages === 0);
    const start = again.events.find((e) => e.event === 'start');
    expect(start?.data).toMatchObject({ takeover: true, resumed: true, resumeFromPhaseIndex: 0 });
    const from = Number(start!.data.supersedesFromSeq);
    const kept = all.filter((e) => e.event === 'chunk' && (e.id < from || e.id > Number(start!.id)));
    const done = all.at(-1)!;
    expect(done).toMatchObject({ event: 'done', data: { stopReason: 'final_answer' } });
    expect(kept.map((e) => String(e.data.content)).join('')).toBe(String(done.data.fullContent));
    expect(String(done.data.fullContent)).toBe(ANSWER.join(' '));
    const message = (await pg.query<{ content: string }>(`SELECT content FROM chat_messages WHERE request_id = $1 AND role = 'assistant'`, [requestId])).rows;
    expect(message.map((m) => m.content)).toEqual([ANSWER.join(' ')]);
    expect(pages).toBe(1);
  }, 120_000);

  it('unified: A killed while its read-only tool ran: B continues from the checkpoint before the step’s calls and runs it again (a side-effect tool would be answered as cut off)', async () => {
    cut = 'tool';
    const { requestId, again, all } = await killedAndReconnected('/api/chat/messages', (got) => got.some((e) => e.event === 'tool_progress' && e.data.action === 'calling') && pages === 1);
    const start = again.events.find((e) => e.event === 'start');
    // the checkpoint of the action phase whose response asked for the call (phase 1), taken before it ran
    expect(start?.data).toMatchObject({ takeover: true, resumeFromPhaseIndex: 1 });
    // the tool phase cut short is superseded; the continuation runs it again: fetch_page only reads
    expect(again.events.filter((e) => e.event === 'tool_progress').map((e) => e.data.action)).toEqual(['calling', 'completed']);
    expect(pages).toBe(2);
    const done = all.at(-1)!;
    expect(done).toMatchObject({ event: 'done', data: { stopReason: 'final_answer', fullContent: ANSWER.join(' ') } });
    const message = (await pg.query<{ content: string }>(`SELECT content FROM chat_messages WHERE request_id = $1 AND role = 'assistant'`, [requestId])).rows;
    expect(message.map((m) => m.content)).toEqual([ANSWER.join(' ')]);
    const run = (await pg.query('SELECT status, takeovers FROM runs WHERE request_id = $1', [requestId])).rows[0];
    expect(run).toMatchObject({ status: 'completed', takeovers: 1 });
  }, 120_000);
});
