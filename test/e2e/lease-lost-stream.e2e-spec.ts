import type { ServerResponse } from 'node:http';
import { DataSource } from 'typeorm';
import { RunSweeperService } from '../../src/runs/run-sweeper.service';
import { startApp, type TestApp } from '../support/app';
import { ReplayServer, respond } from '../support/replay-server';
import { checkEnvelope, sse, type SseEvent } from '../support/sse-client';
import { waitFor } from '../support/wait-for';
import { scriptedDelay } from '../support/scripted-delay';

/**
 * Issue #29: a stream whose instance lost its run's lease (it stalled past it and another
 * instance closed the run) still ends with exactly one `done`: its client is sent the events the
 * other instance stored after the last one it got, exactly as stored, then the stream ends.
 *
 * Another instance's takeover is played on the database, with the same steps: the claim
 * (RunTakeoverRepository.claimExpired's UPDATE, for this one run) and then the sweeper's own close
 * (RunSweeperService.closeFromStoredEvents, which stores `error instance_lost` and `done`).
 * Splitting them lets a test decide whether the stalled instance finds the end already stored,
 * still missing, or never stored.
 */
const LEASE_MS = 4000;

/** An OpenAI stream: `before` at once, then `after` once `gate` opens, then open until the caller closes it. */
function gatedAnswer(before: string[], after: string[], gate: Promise<void>) {
  const frame = (content: string) =>
    `data: ${JSON.stringify({ id: 'g', object: 'chat.completion.chunk', created: 0, model: 'scripted-model', choices: [{ index: 0, delta: { content }, finish_reason: null }] })}\n\n`;
  return respond.handler(async (_req, res: ServerResponse) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    for (const w of before) res.write(frame(w));
    await gate;
    for (const w of after) res.write(frame(w));
    // never finished: the turn ends because its instance lost the run, not because the model did
    await new Promise((r) => res.once('close', r));
  });
}

describe('a stream whose instance lost its run lease', () => {
  let llm: ReplayServer;
  let t: TestApp;
  let ds: DataSource;

  beforeAll(async () => {
    llm = await ReplayServer.start();
    t = await startApp({ LLM_PROVIDER: 'openai', LLM_BASE_URL: llm.openAiBaseUrl, LLM_MODEL: 'scripted-model', TWO_STAGE_ENABLED: 'true', RUN_LEASE_MS: String(LEASE_MS) });
    ds = t.app.get(DataSource);
  });
  afterAll(async () => {
    await t?.close();
    await llm?.close();
  });
  beforeEach(() => llm.reset());

  /** what the claim of an expired lease does to the run (RunTakeoverRepository.claimExpired), for this run */
  const claim = (requestId: string) =>
    ds.query(`UPDATE runs SET status = 'failed', stop_reason = 'error', control = NULL, lease_owner = NULL, lease_expires_at = NULL, updated_at = now() WHERE request_id = $1 AND status = 'running'`, [requestId]);
  /** the rest of the takeover: the answer rebuilt, `error instance_lost` and `done` stored */
  const close = async (requestId: string) => {
    const [run] = await ds.query(`SELECT conversation_id, project_id FROM runs WHERE request_id = $1`, [requestId]);
    await t.app.get(RunSweeperService).closeFromStoredEvents({ requestId, conversationId: run.conversation_id, projectId: run.project_id }, 'failed');
  };
  const stored = async (requestId: string): Promise<Array<{ seq: number; type: string; data: Record<string, unknown> }>> =>
    ds.query(`SELECT seq, type, data FROM run_event_list WHERE request_id = $1 ORDER BY seq`, [requestId]);

  /**
   * A turn on `route` whose model sends three words, waits until `takeOver` (run once the client
   * has the third word) is done, then sends two more. Returns what the client received.
   */
  async function turnTakenOver(route: string, takeOver: (requestId: string) => Promise<void>) {
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    llm.enqueue(gatedAnswer(['one ', 'two ', 'three '], ['four ', 'five '], gate));
    let requestId = '';
    let text = '';
    let takenOver: Promise<void> | null = null;
    const res = await sse(`${t.url}${route}`, {
      body: { content: 'count to five' },
      onEvent: (e) => {
        if (e.event === 'start') requestId = String(e.data.requestId);
        // the three words may come in one chunk or several (deltas read together are one chunk)
        if (e.event === 'chunk' && (text += String(e.data.content)) === 'one two three ') takenOver = takeOver(requestId).then(open);
      },
    });
    await takenOver;
    return { requestId, events: res.events };
  }

  /** Everything the client got is stored under its seq, one `done` last; the events after its last chunk are the stored ones, JSON for JSON. */
  async function expectStoredEnd(requestId: string, events: SseEvent[]) {
    checkEnvelope(events);
    expect(events.map((e) => Number(e.id))).toEqual(events.map((_, i) => i + 1));
    expect(events.filter((e) => e.event === 'done')).toHaveLength(1);
    const rows = await stored(requestId);
    expect(rows.at(-1)!.type).toBe('done');
    const lastChunk = events.map((e) => e.event).lastIndexOf('chunk');
    const tail = events.slice(lastChunk + 1);
    const storedTail = rows.filter((r) => r.seq > Number(events[lastChunk].id));
    expect(tail.map((e) => [Number(e.id), e.event])).toEqual(storedTail.map((r) => [r.seq, r.type]));
    // the same JSON text the reconnect route sends for those rows (jsonb's order of members)
    expect(tail.map((e) => JSON.stringify(e.data))).toEqual(storedTail.map((r) => JSON.stringify(r.data)));
    expect(tail.map((e) => e.event)).toEqual(['error', 'done']);
    expect(tail[0].data).toMatchObject({ code: 'instance_lost' });
    expect(tail[1].data).toMatchObject({ stopReason: 'error', fullContent: 'one two three ' });
  }

  it.each([
    ['unified', '/api/chat/messages'],
    ['two-stage', '/api/chat/messages_two_stage'],
  ])('%s: the run closed elsewhere before the instance notices: its client gets the stored error and done, then the stream ends', async (_name, route) => {
    const { requestId, events } = await turnTakenOver(route, async (id) => {
      await claim(id);
      await close(id);
    });
    await expectStoredEnd(requestId, events);
  });

  it('the instance notices before the other one stored the end: its client waits for it, then gets it', async () => {
    const { requestId, events } = await turnTakenOver('/api/chat/messages', async (id) => {
      await claim(id);
      // the end is stored only once this instance has stopped the turn (its model request closed)
      void waitFor(() => llm.chatRequests.at(-1)?.closedEarlyAt !== undefined, { timeoutMs: 10_000, what: 'the model request to close' }).then(() => close(id));
    });
    expect(llm.chatRequests.at(-1)?.closedEarlyAt).toBeDefined();
    await expectStoredEnd(requestId, events);
  });

  it('the end is never stored: the client gets error lease_lost at the next seq (no done) within RUN_LEASE_MS, and a reconnect after it gets the one done once stored', async () => {
    const { requestId, events } = await turnTakenOver('/api/chat/messages', claim);
    const last = events.at(-1)!;
    expect(last.event).toBe('error');
    expect(last.data).toMatchObject({ code: 'lease_lost', retryable: true });
    expect(events.map((e) => Number(e.id))).toEqual(events.map((_, i) => i + 1));
    expect(events.some((e) => e.event === 'done')).toBe(false);
    checkEnvelope(events);
    expect(await stored(requestId)).toHaveLength(events.length - 1);
    // the takeover finishes late: reconnecting after the last id read gives the run's done, once
    await close(requestId);
    const again = await sse(`${t.url}/api/chat/runs/${requestId}/events`, { headers: { 'last-event-id': String(last.id) } });
    expect(again.events.map((e) => e.event)).toEqual(['done']);
    expect(Number(again.events[0].id)).toBe(Number(last.id) + 1);
  });

  it('a client that reconnects between the takeover\'s claim and its stored end waits for that end instead of a stream without done (issue 44)', async () => {
    let following: Promise<{ events: SseEvent[] }> | null = null;
    const { requestId, events } = await turnTakenOver('/api/chat/messages', async (id) => {
      await claim(id);
      // the run reads closed and nothing after the client's last event is stored yet
      const lastSeq = (await stored(id)).at(-1)!.seq;
      following = sse(`${t.url}/api/chat/runs/${id}/events`, { headers: { 'last-event-id': String(lastSeq) } });
      // the sweeper's window between its claim and its store, longer than the follower's poll
      await scriptedDelay(1500);
      await close(id);
    });
    await expectStoredEnd(requestId, events);
    const followed = await following!;
    expect(followed.events.map((e) => e.event)).toEqual(['error', 'done']);
  });
});

