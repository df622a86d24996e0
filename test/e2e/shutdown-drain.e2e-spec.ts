import type { ServerResponse } from 'node:http';
import { DataSource } from 'typeorm';
import { RunDrainService } from '../../src/runs/run-drain.service';
import { startApp, type TestApp } from '../support/app';
import { ReplayServer, respond } from '../support/replay-server';
import { sse } from '../support/sse-client';
import { waitFor } from '../support/wait-for';

/**
 * Issue 44, item 4 (rolling deploys): what SIGTERM does before the application closes
 * (RunDrainService, run by main.ts's SIGTERM handler; called directly here). A draining instance
 * refuses new turns with 503 shutting_down and Retry-After, its readiness probe fails, a short
 * turn finishes here, and a turn still running past the grace period is handed over at its next
 * checkpoint: stored up to that checkpoint, nothing after it, the run still `running` and its
 * lease released for another instance's sweeper.
 */
const LEASE_MS = 3000;

const frame = (delta: Record<string, unknown>, finish: string | null = null) =>
  `data: ${JSON.stringify({ id: 'd', object: 'chat.completion.chunk', created: 0, model: 'scripted-model', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;

/** An OpenAI stream that answers once `gate` opens: `words`, or (`toolCall`) one call of list_files. */
function gated(gate: Promise<void>, answer: { words?: string[]; toolCall?: boolean }) {
  return respond.handler(async (_req, res: ServerResponse) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write(frame({ role: 'assistant' }));
    await gate;
    if (answer.toolCall) {
      res.end(frame({ tool_calls: [{ index: 0, id: 'call_drain', type: 'function', function: { name: 'list_files', arguments: '{"path":"."}' } }] }) + frame({}, 'tool_calls') + 'data: [DONE]\n\n');
      return;
    }
    for (const w of answer.words ?? []) res.write(frame({ content: w }));
    res.end(frame({}, 'stop') + 'data: [DONE]\n\n');
  });
}

function opened(): { gate: Promise<void>; open: () => void } {
  let open!: () => void;
  const gate = new Promise<void>((r) => (open = r));
  return { gate, open };
}

describe('draining on SIGTERM (rolling deploys)', () => {
  let llm: ReplayServer;
  let t: TestApp;
  let ds: DataSource;

  beforeAll(async () => {
    llm = await ReplayServer.start();
  });
  afterAll(async () => {
    await llm?.close();
  });
  // a drained app takes no more turns: one app per test
  beforeEach(async () => {
    llm.reset();
    t = await startApp({ LLM_PROVIDER: 'openai', LLM_BASE_URL: llm.openAiBaseUrl, LLM_MODEL: 'scripted-model', TWO_STAGE_ENABLED: 'true', RUN_LEASE_MS: String(LEASE_MS) });
    ds = t.app.get(DataSource);
  }, 120_000);
  afterEach(async () => {
    await t?.close();
  });

  /** A turn on `route` whose model streams one chunk and never finishes (no checkpoint comes); resolves once that chunk arrived. */
  async function endlessAnswer(route: string): Promise<{ requestId: string; turn: ReturnType<typeof sse> }> {
    llm.enqueue(
      respond.handler(async (_req, res: ServerResponse) => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(frame({ content: 'a long ' }));
        await new Promise((r) => res.once('close', r));
      }),
    );
    let requestId = '';
    let chunks = 0;
    const turn = sse(`${t.url}/api/chat/${route}`, {
      body: { content: 'a long answer' },
      onEvent: (e) => {
        if (e.event === 'start') requestId = String(e.data.requestId);
        if (e.event === 'chunk') chunks++;
      },
    });
    await waitFor(() => chunks > 0, { what: 'the answer to stream' });
    return { requestId, turn };
  }

  it('refuses new turns with 503 and Retry-After, fails readiness, and lets a short turn finish here', async () => {
    const { gate, open } = opened();
    llm.enqueue(gated(gate, { words: ['short ', 'answer'] }));
    let requestId = '';
    const turn = sse(`${t.url}/api/chat/messages`, { body: { content: 'a short turn' }, onEvent: (e) => {
        if (e.event === 'start') requestId = String(e.data.requestId);
      } });
    await waitFor(() => requestId !== '', { what: 'the turn to start' });
    const drained = t.app.get(RunDrainService).run(10_000);

    const refused = await fetch(`${t.url}/api/chat/messages`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ content: 'a new turn' }) });
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('1');
    expect(await refused.json()).toMatchObject({ error: 'shutting_down', retryAfter: 1 });
    const ready = await fetch(`${t.url}/api/health/ready`);
    expect(ready.status).toBe(503);
    expect(JSON.stringify(await ready.json())).toContain('draining');
    // nothing of the refused turn was stored
    expect(Number((await ds.query(`SELECT count(*) AS n FROM chat_messages WHERE content = 'a new turn'`))[0].n)).toBe(0);
    // the reconnect route still serves
    expect((await fetch(`${t.url}/api/chat/runs/${requestId}`)).status).toBe(200);

    open();
    const res = await turn;
    const done = res.events.filter((e) => e.event === 'done');
    expect(done).toHaveLength(1);
    expect(done[0].data.stopReason).toBe('final_answer');
    expect(await drained).toEqual({ finished: 1, handedOver: 0 });
    expect((await ds.query(`SELECT status FROM runs WHERE request_id = $1`, [requestId]))[0].status).toBe('completed');
  }, 60_000);

  it.each(['messages_two_stage', 'messages'])('%s: hands a turn still running at the end of the grace period over at its next checkpoint: lease released, nothing stored after it', async (route) => {
    const { gate, open } = opened();
    // the action phase asks for a tool. Two-stage: its result is checkpointed, and the next model
    // call never answers here. Unified: the response is checkpointed before its calls run
    llm.enqueue(gated(gate, { toolCall: true }), respond.hang());
    let requestId = '';
    const turn = sse(`${t.url}/api/chat/${route}`, { body: { content: 'list the files' }, onEvent: (e) => {
        if (e.event === 'start') requestId = String(e.data.requestId);
      } });
    // the model called: the turn is past its phase 0 checkpoint (a unified turn writes one before
    // its first call), so the next checkpoint is the one after the model answers
    await waitFor(() => requestId !== '' && llm.chatRequests.length === 1, { what: 'the turn to call the model' });
    // no grace: the run is asked at once to go at its next checkpoint, which comes once the model answers
    const drained = t.app.get(RunDrainService).run(0);
    open();
    expect(await drained).toEqual({ finished: 0, handedOver: 1 });

    const [run] = await ds.query(`SELECT status, lease_owner, lease_expires_at, checkpoint FROM runs WHERE request_id = $1`, [requestId]);
    expect(run.status).toBe('running');
    expect(run.lease_owner).toBeNull();
    expect(new Date(run.lease_expires_at).getTime()).toBeLessThanOrEqual(Date.now());
    const unified = route === 'messages';
    // the checkpoint the turn stopped at: two-stage's tool phase (2); unified's action phase (1), the calls not run
    expect(Object.keys(run.checkpoint?.byPhase ?? {}).at(-1)).toBe(unified ? '1' : '2');
    const stored: Array<{ type: string; data: Record<string, unknown> }> = await ds.query(`SELECT type, data FROM run_event_list WHERE request_id = $1 ORDER BY seq`, [requestId]);
    // two-stage: the tool phase ended (its result is what the checkpoint holds); unified: the call
    // was shown (tool_calls) and nothing of it ran here, the taker runs it; no answer, no end stored here
    if (unified) expect(stored.filter((e) => e.type === 'tool_calls' || e.type === 'tool_progress').map((e) => e.type)).toEqual(['tool_calls']);
    else expect(stored.some((e) => e.type === 'tool_progress' && e.data.action === 'completed')).toBe(true);
    expect(stored.map((e) => e.type)).not.toContain('done');
    expect(Number((await ds.query(`SELECT count(*) AS n FROM chat_messages WHERE request_id = $1 AND role = 'assistant'`, [requestId]))[0].n)).toBe(0);
    // its client here waited for the taker's events, for a lease, then was told to reconnect
    const res = await turn;
    expect(res.events.map((e) => e.event)).not.toContain('done');
    expect(res.events.at(-1)).toMatchObject({ event: 'error', data: { code: 'lease_lost' } });
  }, 60_000);

  it.each(['messages_two_stage', 'messages'])('%s: hands a turn that reaches no checkpoint in time over where it is: fenced, stopped, lease released, no end or answer stored here', async (route) => {
    // its model streaming and never finishing: no checkpoint comes (a unified turn has its phase 0 one: the taker starts it again)
    const { requestId, turn } = await endlessAnswer(route);
    expect(await t.app.get(RunDrainService).run(0)).toEqual({ finished: 0, handedOver: 1 });
    const [run] = await ds.query(`SELECT status, lease_owner FROM runs WHERE request_id = $1`, [requestId]);
    expect(run).toEqual({ status: 'running', lease_owner: null });
    const types: string[] = (await ds.query(`SELECT type FROM run_event_list WHERE request_id = $1 ORDER BY seq`, [requestId])).map((r: { type: string }) => r.type);
    expect(types).toContain('chunk');
    expect(types).not.toContain('done');
    expect(Number((await ds.query(`SELECT count(*) AS n FROM chat_messages WHERE request_id = $1 AND role = 'assistant'`, [requestId]))[0].n)).toBe(0);
    const res = await turn;
    expect(res.events.at(-1)).toMatchObject({ event: 'error', data: { code: 'lease_lost' } });
  }, 60_000);

  it('ends the streams that follow runs on its events route once its own runs are handed over: all that is stored, no done; one opened later ends at once', async () => {
    const { requestId, turn } = await endlessAnswer('messages_two_stage');
    let followerEnded = false;
    const follower = sse(`${t.url}/api/chat/runs/${requestId}/events`, { headers: { 'last-event-id': '0' } }).then((r) => {
      followerEnded = true;
      return r;
    });
    await waitFor(async () => Number((await ds.query(`SELECT count(*) AS n FROM run_event_list WHERE request_id = $1`, [requestId]))[0].n) > 0, { what: 'events to be stored' });
    expect(await t.app.get(RunDrainService).run(0)).toEqual({ finished: 0, handedOver: 1 });
    // the drain waits (bounded) for its followers to end: the process is free to close
    await waitFor(() => followerEnded, { what: 'the follower to be ended by the drain', timeoutMs: 500 });
    const stored: number[] = (await ds.query(`SELECT seq FROM run_event_list WHERE request_id = $1 ORDER BY seq`, [requestId])).map((r: { seq: number }) => Number(r.seq));
    const followed = await follower;
    expect(followed.status).toBe(200);
    // every stored event, in order, nothing invented: the client reconnects elsewhere with its last id
    expect(followed.events.map((e) => Number(e.id))).toEqual(stored);
    expect(followed.events.map((e) => e.event)).not.toContain('done');
    // a stream opened on the drained instance sends what is stored after its Last-Event-ID and ends
    const late = await sse(`${t.url}/api/chat/runs/${requestId}/events`, { headers: { 'last-event-id': String(stored[0]) }, timeoutMs: 5_000 });
    expect(late.events.map((e) => Number(e.id))).toEqual(stored.slice(1));
    await turn;
  }, 60_000);
});
