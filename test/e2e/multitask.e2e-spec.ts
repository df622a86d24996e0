import { DataSource } from 'typeorm';
import { ToolRegistryService } from '../../src/tools/tool-registry.service';
import { startApp, type TestApp } from '../support/app';
import { onPostgres } from '../support/db';
import { ReplayServer, respond } from '../support/replay-server';
import { gatedTool } from '../support/test-tools';
import { sse, type SseEvent, type SseResponse } from '../support/sse-client';
import { waitFor } from '../support/wait-for';

const post = (url: string, body: unknown) => fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

/** A client's stream of one message, read as it comes. */
interface Sent {
  done: Promise<SseResponse>;
  /** resolves with the first event of that type (fails the test when the stream ends without it) */
  first(type: string): Promise<SseEvent>;
  events: SseEvent[];
}

/**
 * Issue 33: a conversation runs one turn at a time. A message sent while the previous turn is
 * still streaming follows `options.multitask`: reject (409, nothing stored), enqueue (queued,
 * runs after, sees the earlier answer), interrupt (the active turn is cancelled, its partial
 * answer kept and marked), rollback (cancelled and taken out of the history). Each case runs on
 * both chat routes; the PostgreSQL pass runs the same file on PostgreSQL.
 */
describe.each([
  ['unified', '/api/chat/messages'],
  ['two-stage', '/api/chat/messages_two_stage'],
])('one turn at a time per conversation (%s route)', (_name, route) => {
  let llm: ReplayServer;
  let app: TestApp;
  let url: string;
  /** the tool a first turn is held in until the test opens its gate */
  const { gate, tool: gateTool } = gatedTool();

  beforeAll(async () => {
    llm = await ReplayServer.start();
    app = await startApp({ LLM_PROVIDER: 'openai', LLM_BASE_URL: llm.openAiBaseUrl, LLM_MODEL: 'scripted-model', TWO_STAGE_ENABLED: 'true' });
    url = app.url;
    app.app.get(ToolRegistryService).register(gateTool);
  }, 120_000);
  afterAll(async () => {
    await app.close();
    await llm.close();
  });
  beforeEach(() => {
    llm.reset();
    gate.arm();
  });

  const send = (body: Record<string, unknown>, onEvent?: (e: SseEvent) => void | 'close'): Sent => {
    const events: SseEvent[] = [];
    const waiters: Array<{ type: string; resolve: (e: SseEvent) => void }> = [];
    const done = sse(`${url}${route}`, {
      body,
      timeoutMs: 30_000,
      onEvent: (e) => {
        events.push(e);
        for (const w of waiters.filter((x) => x.type === e.event)) w.resolve(e);
        return onEvent?.(e);
      },
    });
    const first = (type: string) =>
      new Promise<SseEvent>((resolve, reject) => {
        const seen = events.find((e) => e.event === type);
        if (seen) return resolve(seen);
        waiters.push({ type, resolve });
        void done.then(() => reject(new Error(`the stream ended without ${type}: ${events.map((e) => e.event).join(', ')}`)), reject);
      });
    return { done, first, events };
  };

  const messages = async (conversationId: string) =>
    (await (await fetch(`${url}/api/chat/conversations/${conversationId}/messages`)).json()) as Array<{ role: string; content: string; requestId: string; status: string; interruptedBy?: string | null }>;
  const db = () => app.app.get(DataSource);
  const runCount = async (conversationId: string) => (await db().query(`SELECT count(*)::int AS n FROM runs WHERE conversation_id = $1`, [conversationId]))[0].n as number;

  /** user, assistant, user, assistant…: each answer right after its own question */
  const expectAlternating = (list: Array<{ role: string; requestId: string }>) => {
    expect(list.map((m) => m.role)).toEqual(list.map((_, i) => (i % 2 === 0 ? 'user' : 'assistant')));
    for (let i = 0; i < list.length; i += 2) expect(list[i + 1].requestId).toBe(list[i].requestId);
  };

  /** A first turn held in its tool call until the test opens the gate; resolves once it waits there. */
  const heldTurn = async (content = 'First question', conversationId?: string) => {
    llm.enqueue(respond.turn([{ toolCall: { name: 'probe_gate', args: { step: 'one' }, id: 'g1' } }]), respond.turn([{ text: 'First answer.' }]));
    const first = send({ content, ...(conversationId && { conversationId }) });
    const start = await first.first('start');
    await gate.reached;
    return { first, requestId: start.data.requestId as string, conversationId: start.data.conversationId as string };
  };

  it('reject (the default): 409 conversation_busy naming the active turn, and nothing is stored', async () => {
    const { first, requestId, conversationId } = await heldTurn();
    const before = await messages(conversationId);
    const res = await post(`${url}${route}`, { content: 'Second question', conversationId });
    expect(res.status).toBe(409);
    expect(await res.json()).toMatchObject({ statusCode: 409, error: 'conversation_busy', requestId });
    expect(await messages(conversationId)).toEqual(before);
    expect(await runCount(conversationId)).toBe(1);
    gate.open();
    expect((await first.done).events.at(-1)).toMatchObject({ event: 'done', data: { stopReason: 'final_answer' } });
    const list = await messages(conversationId);
    expect(list.map((m) => m.content)).toEqual(['First question', 'First answer.']);
    expect(llm.chatRequests).toHaveLength(2);
  });

  it('enqueue: queued at once, started only after the first turn\'s done, and its model sees the first answer', async () => {
    const { first, requestId, conversationId } = await heldTurn();
    llm.enqueue(respond.turn([{ text: 'Second answer.' }]));
    const order: string[] = [];
    void first.done.then(() => order.push('first done'));
    const second = send({ content: 'Second question', conversationId, options: { multitask: 'enqueue' } }, (e) => {
      if (e.event === 'start') order.push('second start');
    });
    const queued = await second.first('queued');
    expect(queued.data).toMatchObject({ position: 1, activeRequestId: requestId, conversationId, seq: 0 });
    expect(queued.id).toBe('0');
    // queued, not stored as a message yet: the history shows only the turn that runs
    expect((await messages(conversationId)).map((m) => m.content)).toEqual(['First question']);
    gate.open();
    const res = await second.done;
    expect(order).toEqual(['first done', 'second start']);
    expect(res.events.map((e) => e.event)[0]).toBe('queued');
    expect(res.events.at(-1)).toMatchObject({ event: 'done', data: { stopReason: 'final_answer', fullContent: 'Second answer.' } });
    const list = await messages(conversationId);
    expectAlternating(list);
    expect(list.map((m) => m.content)).toEqual(['First question', 'First answer.', 'Second question', 'Second answer.']);
    // the second turn's model saw the first answer before its question
    const seen = (llm.chatRequests.at(-1)!.body.messages as Array<{ role: string; content: string }>).filter((m) => m.role === 'user' || m.role === 'assistant');
    expect(seen.map((m) => m.content)).toEqual(['First question', 'First answer.', 'Second question']);
  });

  it('enqueue: cancelling a queued turn takes it out of the queue; its stream ends with done cancelled and nothing is stored for it', async () => {
    const { first, conversationId } = await heldTurn();
    const second = send({ content: 'Never mind', conversationId, options: { multitask: 'enqueue' } });
    const queued = await second.first('queued');
    const cancel = await post(`${url}/api/chat/runs/${queued.data.requestId}/cancel`, {});
    expect(cancel.status).toBe(202);
    expect(await cancel.json()).toMatchObject({ requestId: queued.data.requestId, status: 'cancelled' });
    const res = await second.done;
    expect(res.events.map((e) => e.event)).toEqual(['queued', 'done']);
    expect(res.events.at(-1)!.data).toMatchObject({ stopReason: 'cancelled', messageId: null });
    gate.open();
    await first.done;
    expect((await messages(conversationId)).map((m) => m.content)).toEqual(['First question', 'First answer.']);
    expect(await runCount(conversationId)).toBe(1);
    expect(llm.chatRequests).toHaveLength(2);
  });

  it('enqueue: a queued turn whose client left never starts (a detached one still runs)', async () => {
    const { first, conversationId } = await heldTurn();
    const left = send({ content: 'Gone', conversationId, options: { multitask: 'enqueue' } }, (e) => (e.event === 'queued' ? 'close' : undefined));
    await left.done;
    await waitFor(async () => (await db().query(`SELECT count(*)::int AS n FROM conversation_turns WHERE conversation_id = $1`, [conversationId]))[0].n === 0, {
      what: 'the left turn to leave the queue',
    });
    llm.enqueue(respond.turn([{ text: 'Detached answer.' }]));
    const detached = send({ content: 'Run anyway', conversationId, options: { multitask: 'enqueue', detach: true } }, (e) => (e.event === 'queued' ? 'close' : undefined));
    await detached.done;
    gate.open();
    await first.done;
    const list = await waitFor(async () => {
      const l = await messages(conversationId);
      return l.length === 4 ? l : null;
    }, { what: 'the detached queued turn to answer', timeoutMs: 10_000 });
    expectAlternating(list);
    expect(list.map((m) => m.content)).toEqual(['First question', 'First answer.', 'Run anyway', 'Detached answer.']);
    expect(await runCount(conversationId)).toBe(2);
  });

  it('interrupt: the active turn is cancelled, its partial answer kept and marked; the new turn sees it', async () => {
    llm.enqueue(respond.turn([{ text: 'Partial ' }, { text: 'answer' }], { faults: { stallAfter: 2 } }));
    const first = send({ content: 'First question' });
    const chunk = await first.first('chunk');
    const { requestId, conversationId } = chunk.data as { requestId: string; conversationId: string };
    llm.enqueue(respond.turn([{ text: 'Second answer.' }]));
    const second = send({ content: 'Actually, this', conversationId, options: { multitask: 'interrupt' } });
    const queued = await second.first('queued');
    expect(queued.data).toMatchObject({ position: 1, activeRequestId: requestId });
    const firstEnd = (await first.done).events.at(-1)!;
    expect(firstEnd).toMatchObject({ event: 'done', data: { stopReason: 'cancelled' } });
    const partial = firstEnd.data.fullContent as string;
    expect(partial.length).toBeGreaterThan(0);
    const res = await second.done;
    expect(res.events.at(-1)).toMatchObject({ event: 'done', data: { stopReason: 'final_answer' } });
    const list = await messages(conversationId);
    expectAlternating(list);
    expect(list.map((m) => m.content)).toEqual(['First question', partial, 'Actually, this', 'Second answer.']);
    expect(list[1]).toMatchObject({ status: 'cancelled', interruptedBy: queued.data.requestId });
    expect(list[3].interruptedBy).toBeNull();
    const seen = (llm.chatRequests.at(-1)!.body.messages as Array<{ role: string; content: string }>).filter((m) => m.role === 'user' || m.role === 'assistant');
    expect(seen.map((m) => m.content)).toEqual(['First question', partial, 'Actually, this']);
  });

  it('interrupt, 5 at once: each interrupted answer names the message that cut it off, not a later one queued against it', async () => {
    llm.setFallback(respond.turn([{ text: 'An answer.' }]));
    llm.enqueue(respond.turn([{ text: 'Partial ' }, { text: 'answer' }], { faults: { stallAfter: 2 } }));
    const first = send({ content: 'First question' });
    const chunk = await first.first('chunk');
    const { requestId, conversationId } = chunk.data as { requestId: string; conversationId: string };
    const sends = Array.from({ length: 5 }, (_, i) => send({ content: `Interrupt ${i}`, conversationId, options: { multitask: 'interrupt' } }));
    const queued = await Promise.all(sends.map((s) => s.first('queued')));
    const results = await Promise.all(sends.map((s) => s.done));
    await first.done;
    for (const r of results) expect(r.events.filter((e) => e.event === 'done')).toHaveLength(1);
    // the turn that cut an answer off is the first message queued against it (the lowest place)
    const cutOffBy = new Map<string, { position: number; requestId: string }>();
    for (const q of queued) {
      const by = q.data as { activeRequestId: string; position: number; requestId: string };
      const seen = cutOffBy.get(by.activeRequestId);
      if (!seen || by.position < seen.position) cutOffBy.set(by.activeRequestId, { position: by.position, requestId: by.requestId });
    }
    expect(cutOffBy.has(requestId)).toBe(true);
    const list = await messages(conversationId);
    expectAlternating(list);
    expect(list).toHaveLength(12);
    for (const answer of list.filter((m) => m.role === 'assistant')) {
      if (answer.status === 'cancelled') expect(answer.interruptedBy).toBe(cutOffBy.get(answer.requestId)?.requestId);
      else expect(answer.interruptedBy).toBeNull();
    }
  });

  it('rollback: the active turn is cancelled and its question and partial answer leave the history (kept in the run record)', async () => {
    llm.enqueue(respond.turn([{ text: 'Zero answer.' }]));
    const zero = await send({ content: 'Zero question' }).done;
    const conversationId = zero.events[0].data.conversationId as string;
    llm.enqueue(respond.turn([{ text: 'Wrong ' }, { text: 'way' }], { faults: { stallAfter: 2 } }));
    const first = send({ content: 'Wrong question', conversationId });
    const chunk = await first.first('chunk');
    const rolledBack = chunk.data.requestId as string;
    llm.enqueue(respond.turn([{ text: 'Right answer.' }]));
    const second = send({ content: 'Right question', conversationId, options: { multitask: 'rollback' } });
    await second.first('queued');
    expect((await first.done).events.at(-1)).toMatchObject({ event: 'done', data: { stopReason: 'cancelled' } });
    const res = await second.done;
    expect(res.events.at(-1)).toMatchObject({ event: 'done', data: { stopReason: 'final_answer', fullContent: 'Right answer.' } });
    const list = await messages(conversationId);
    expectAlternating(list);
    expect(list.map((m) => m.content)).toEqual(['Zero question', 'Zero answer.', 'Right question', 'Right answer.']);
    const seen = (llm.chatRequests.at(-1)!.body.messages as Array<{ role: string; content: string }>).filter((m) => m.role === 'user' || m.role === 'assistant');
    expect(seen.map((m) => m.content)).toEqual(['Zero question', 'Zero answer.', 'Right question']);
    // the rolled-back turn stays in its run's record: the run, its events, its stored rows
    expect(await (await fetch(`${url}/api/chat/runs/${rolledBack}`)).json()).toMatchObject({ status: 'cancelled' });
    const events = await (await fetch(`${url}/api/chat/runs/${rolledBack}/events`)).text();
    expect(events).toContain('Wrong ');
    const kept = await db().query(`SELECT role, content FROM chat_messages WHERE request_id = $1 ORDER BY created_at`, [rolledBack]);
    expect(kept.map((m: { role: string }) => m.role)).toEqual(['user', 'assistant']);
  });

  it('20 concurrent sends: reject lets exactly one start; enqueue runs each accepted message once, in order, without interleaving', async () => {
    llm.setFallback(respond.turn([{ text: 'An answer.' }]));
    llm.enqueue(respond.turn([{ text: 'Opening answer.' }]));
    const opening = await send({ content: 'Opening' }).done;
    const conversationId = opening.events[0].data.conversationId as string;

    // reject, on an idle conversation: one wins (its turn held in a tool call), the others are 409 naming it
    llm.enqueue(respond.turn([{ toolCall: { name: 'probe_gate', args: { step: 'one' }, id: 'g1' } }]), respond.turn([{ text: 'Winner answer.' }]));
    const settled: SseResponse[] = [];
    const rejecting = Array.from({ length: 20 }, (_, i) => send({ content: `Reject ${i}`, conversationId }).done.then((r) => (settled.push(r), r)));
    await gate.reached;
    await waitFor(() => settled.length === 19, { what: '19 refusals while the winner runs' });
    gate.open();
    const rejects = await Promise.all(rejecting);
    const won = rejects.filter((r) => r.status === 200);
    expect(won).toHaveLength(1);
    const winner = won[0].events[0].data.requestId;
    for (const r of rejects.filter((x) => x.status !== 200)) expect(JSON.parse(r.body)).toMatchObject({ statusCode: 409, error: 'conversation_busy', requestId: winner });
    expect(await runCount(conversationId)).toBe(2);
    expect((await messages(conversationId)).map((m) => m.content)).toEqual(['Opening', 'Opening answer.', expect.stringMatching(/^Reject \d+$/), 'Winner answer.']);

    // enqueue: every message gets its turn, one after the other
    const asked = llm.chatRequests.length;
    const sends = await Promise.all(Array.from({ length: 20 }, (_, i) => send({ content: `Enqueue ${i}`, conversationId, options: { multitask: 'enqueue' } }).done));
    for (const r of sends) {
      expect(r.status).toBe(200);
      expect(r.events.filter((e) => e.event === 'done')).toHaveLength(1);
      expect(r.events.at(-1)).toMatchObject({ event: 'done', data: { stopReason: 'final_answer' } });
    }
    const list = await messages(conversationId);
    expect(list).toHaveLength(2 * 22);
    expectAlternating(list);
    expect(await runCount(conversationId)).toBe(22);
    // no two turns overlapped: each model request saw every earlier answer
    const lengths = llm.chatRequests.slice(asked).map((q) => (q.body.messages as Array<{ role: string }>).filter((m) => m.role === 'user' || m.role === 'assistant').length);
    expect(lengths).toEqual(Array.from({ length: 20 }, (_, i) => 5 + 2 * i));
  }, 120_000);

  it.each(['interrupt', 'rollback'])('20 concurrent sends with %s: exactly one turn per accepted message, each starting after the previous one ended, history alternating', async (strategy) => {
    llm.setFallback(respond.turn([{ text: 'An answer.' }]));
    llm.enqueue(respond.turn([{ text: 'Opening answer.' }]));
    const opening = await send({ content: 'Opening' }).done;
    const conversationId = opening.events[0].data.conversationId as string;
    // an active turn, streaming until it is cut off
    llm.enqueue(respond.turn([{ text: 'Partial ' }, { text: 'answer' }], { faults: { stallAfter: 2 } }));
    // every turn's start and done, in the order they arrive: no turn starts before the previous one's done
    const timeline: string[] = [];
    const track = (e: SseEvent) => void ((e.event === 'start' || e.event === 'done') && e.data.seq !== 0 && timeline.push(`${e.event} ${e.data.requestId}`));
    const first = send({ content: 'Held question', conversationId }, track);
    await first.first('chunk');
    const sends = await Promise.all(Array.from({ length: 20 }, (_, i) => send({ content: `${strategy} ${i}`, conversationId, options: { multitask: strategy } }, track).done));
    await first.done;
    const started = new Set<string>();
    for (const r of sends) {
      expect(r.status).toBe(200);
      expect(r.events.filter((e) => e.event === 'start')).toHaveLength(1);
      expect(r.events.filter((e) => e.event === 'done')).toHaveLength(1);
      started.add(r.events.find((e) => e.event === 'start')!.data.requestId as string);
    }
    expect(started.size).toBe(20);
    // one run per accepted message (plus the opening and the held turn), and no two at once
    expect(await runCount(conversationId)).toBe(22);
    const runs = (await db().query(`SELECT request_id FROM runs WHERE conversation_id = $1`, [conversationId])) as Array<{ request_id: string }>;
    const list = await messages(conversationId);
    expectAlternating(list);
    if (strategy === 'interrupt') expect(list).toHaveLength(2 * 22);
    expect(timeline).toHaveLength(2 * 21);
    for (let i = 0; i < timeline.length; i += 2) {
      expect(timeline[i]).toMatch(/^start /);
      expect(timeline[i + 1]).toBe(timeline[i].replace('start', 'done'));
    }
    expect(runs.map((r) => r.request_id)).toEqual(expect.arrayContaining([...started]));
  }, 120_000);

  it('options.multitask other than a strategy is a 400 and stores nothing', async () => {
    const res = await post(`${url}${route}`, { content: 'x', options: { multitask: 'later' } });
    expect(res.status).toBe(400);
    expect(JSON.stringify(await res.json())).toContain('options.multitask must be one of reject, enqueue, interrupt, rollback');
  });
});

/**
 * A turn whose instance died stops being active when the sweeper closes its run: the turn queued
 * behind it then starts (the run's close wakes it, whichever instance closed it).
 */
describe('a queued turn behind a run whose instance died', () => {
  let llm: ReplayServer;
  let app: TestApp;

  beforeAll(async () => {
    llm = await ReplayServer.start();
    app = await startApp({ LLM_PROVIDER: 'openai', LLM_BASE_URL: llm.openAiBaseUrl, LLM_MODEL: 'scripted-model', RUN_LEASE_MS: '1000' });
  }, 120_000);
  afterAll(async () => {
    await app.close();
    await llm.close();
  });

  it('starts once the sweeper has closed that run as failed', async () => {
    llm.enqueue(respond.turn([{ text: 'Opening answer.' }]));
    const opening = await sse(`${app.url}/api/chat/messages`, { body: { content: 'Opening' } });
    const conversationId = opening.events[0].data.conversationId as string;
    // a turn another instance was running when it died: its lease is about to lapse, nobody renews it
    const ds = app.app.get(DataSource);
    const dead = '3f2504e0-4f89-41d3-9a0c-0305e82c3301';
    await ds.query(`INSERT INTO chat_messages (conversation_id, role, content, request_id) VALUES ($1, 'user', 'Asked on the dead instance', $2)`, [conversationId, dead]);
    await ds.query(
      `INSERT INTO runs (request_id, conversation_id, project_id, protocol, status, options, lease_owner, lease_expires_at)
       VALUES ($1, $2, 'default', 'unified', 'running', '{}'::jsonb, 'dead-instance', now() + interval '500 milliseconds')`,
      [dead, conversationId],
    );
    llm.enqueue(respond.turn([{ text: 'After the sweep.' }]));
    let queued: SseEvent | undefined;
    const res = await sse(`${app.url}/api/chat/messages`, {
      body: { content: 'Still there?', conversationId, options: { multitask: 'enqueue' } },
      timeoutMs: 30_000,
      onEvent: (e) => void (e.event === 'queued' && (queued ??= e)),
    });
    expect(queued?.data).toMatchObject({ position: 1, activeRequestId: dead });
    expect(res.events.at(-1)).toMatchObject({ event: 'done', data: { stopReason: 'final_answer', fullContent: 'After the sweep.' } });
    expect(await (await fetch(`${app.url}/api/chat/runs/${dead}`)).json()).toMatchObject({ status: 'failed' });
    const list = (await (await fetch(`${app.url}/api/chat/conversations/${conversationId}/messages`)).json()) as Array<{ role: string; content: string; requestId: string }>;
    expect(list.map((m) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant', 'user', 'assistant']);
    expect(list.map((m) => m.content).slice(4)).toEqual(['Still there?', 'After the sweep.']);
  });
});

/**
 * A turn is active while its run is paused or waits for a person, not only while it streams: a
 * message then follows its strategy (reject: 409; enqueue: starts once that turn has ended).
 */
describe('a paused run and a run awaiting approval are the active turn', () => {
  let llm: ReplayServer;
  let app: TestApp;
  const postJson = async (path: string, body: unknown) => {
    const res = await post(`${app.url}${path}`, body);
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };
  const messages = async (conversationId: string) =>
    (await (await fetch(`${app.url}/api/chat/conversations/${conversationId}/messages`)).json()) as Array<{ role: string; content: string; requestId: string }>;

  beforeAll(async () => {
    llm = await ReplayServer.start();
    app = await startApp({ LLM_PROVIDER: 'openai', LLM_BASE_URL: llm.openAiBaseUrl, LLM_MODEL: 'scripted-model', TWO_STAGE_ENABLED: 'true', TOOLS_REQUIRE_APPROVAL: 'read_file' });
  }, 120_000);
  afterAll(async () => {
    await app.close();
    await llm.close();
  });
  beforeEach(() => llm.reset());

  it('a two-stage run paused after a tool phase: a new message with reject is a 409 naming it, and nothing is stored', async () => {
    llm.enqueue(respond.turn([{ toolCall: { name: 'list_files', args: {} } }], { faults: { delayMs: 50 } }));
    const paused = await sse(`${app.url}/api/chat/messages_two_stage`, {
      body: { content: 'look' },
      onEvent: (e) => (e.event === 'start' ? void post(`${app.url}/api/chat/runs/${e.data.requestId}/pause`, {}) : undefined),
    });
    expect(paused.events.at(-1)!.event).toBe('paused');
    const { requestId, conversationId } = paused.events[0].data as { requestId: string; conversationId: string };
    expect(await (await fetch(`${app.url}/api/chat/runs/${requestId}`)).json()).toMatchObject({ status: 'paused' });
    const before = await messages(conversationId);
    const refused = await postJson('/api/chat/messages_two_stage', { content: 'Another question', conversationId, options: { multitask: 'reject' } });
    expect(refused).toMatchObject({ status: 409, body: { error: 'conversation_busy', requestId } });
    expect(await messages(conversationId)).toEqual(before);
  });

  it('a run waiting for approval: reject is a 409; enqueue starts once the approval is decided and that turn has ended', async () => {
    llm.enqueue(respond.turn([{ toolCall: { name: 'read_file', args: { path: 'missing.md' } } }]), respond.turn([{ text: 'First answer.' }]));
    const events: SseEvent[] = [];
    const first = sse(`${app.url}/api/chat/messages`, { body: { content: 'First question' }, onEvent: (e) => void events.push(e) });
    const asked = await waitFor(() => events.find((e) => e.event === 'approval_required'), { what: 'approval_required' });
    const { requestId, conversationId } = asked.data as { requestId: string; conversationId: string };
    const refused = await postJson('/api/chat/messages', { content: 'Refused', conversationId, options: { multitask: 'reject' } });
    expect(refused).toMatchObject({ status: 409, body: { error: 'conversation_busy', requestId } });

    llm.enqueue(respond.turn([{ text: 'Second answer.' }]));
    const order: string[] = [];
    const queuedSeen: SseEvent[] = [];
    const second = sse(`${app.url}/api/chat/messages`, {
      body: { content: 'Second question', conversationId, options: { multitask: 'enqueue' } },
      timeoutMs: 30_000,
      onEvent: (e) => {
        if (e.event === 'queued') queuedSeen.push(e);
        if (e.event === 'start') order.push('second start');
      },
    });
    await waitFor(() => queuedSeen.length > 0, { what: 'the second message to be queued' });
    expect(queuedSeen[0].data).toMatchObject({ position: 1, activeRequestId: requestId });
    void first.then(() => order.push('first done'));
    expect((await postJson(`/api/chat/runs/${requestId}/approvals/${asked.data.approvalId}`, { decision: 'approve' })).status).toBe(200);
    expect((await first).events.at(-1)).toMatchObject({ event: 'done', data: { stopReason: 'final_answer' } });
    const res = await second;
    expect(order).toEqual(['first done', 'second start']);
    expect(res.events.at(-1)).toMatchObject({ event: 'done', data: { stopReason: 'final_answer', fullContent: 'Second answer.' } });
    const list = await messages(conversationId);
    expect(list.map((m) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant']);
    expect(list.map((m) => m.content)).toEqual(['First question', 'First answer.', 'Second question', 'Second answer.']);
  });
});
