import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { ConversationRepository } from '../../src/chat/repositories/conversation.repository';
import { startApp, type TestApp } from '../support/app';
import { itOnPostgres } from '../support/db';
import { ReplayServer, respond } from '../support/replay-server';
import { sse, type SseEvent } from '../support/sse-client';
import { waitFor } from '../support/wait-for';

/**
 * Issue 18: renaming and deleting a conversation over HTTP, on PGlite here and PostgreSQL on
 * test:db. Deletion takes the messages, runs, stored run events and trace events with it, or
 * nothing at all.
 */
const json = (url: string, method: string, body?: unknown) =>
  fetch(url, { method, headers: body === undefined ? {} : { 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });

describe('rename and delete a conversation', () => {
  let llm: ReplayServer;
  let t: TestApp;
  let ds: DataSource;

  beforeAll(async () => {
    llm = await ReplayServer.start();
    t = await startApp({ LLM_PROVIDER: 'openai', LLM_BASE_URL: llm.openAiBaseUrl, LLM_MODEL: 'scripted-model' });
    ds = t.app.get(DataSource);
  });
  afterAll(async () => {
    await t.close();
    await llm.close();
  });
  beforeEach(() => llm.reset());

  /** A finished turn; returns its ids. */
  const turn = async (content: string, projectId: string, conversationId?: string) => {
    llm.enqueue(respond.turn([{ text: `answer to ${content}` }]));
    const res = await sse(`${t.url}/api/chat/messages`, { body: { content, projectId, ...(conversationId ? { conversationId } : {}) } });
    expect(res.events.at(-1)?.event).toBe('done');
    return { conversationId: res.events[0].data.conversationId as string, requestId: res.events[0].data.requestId as string };
  };
  const list = async (projectId: string) => (await (await fetch(`${t.url}/api/chat/conversations?projectId=${projectId}`)).json()) as Array<{ id: string; title: string; updatedAt: string }>;
  const traceOf = async (requestId: string) => (await (await fetch(`${t.url}/api/trace?requestId=${requestId}`)).json()) as unknown[];
  const count = async (table: string, column: string, ids: string[]) =>
    Number((await ds.query(`SELECT count(*)::int AS n FROM ${table} WHERE ${column}::text = ANY($1::text[])`, [ids]))[0].n);

  it('renames: trims the title, keeps the list order, and the new title is what the list shows', async () => {
    const older = await turn('first topic', 'rn');
    const newer = await turn('second topic', 'rn');
    const before = await list('rn');
    expect(before.map((c) => c.id)).toEqual([newer.conversationId, older.conversationId]);

    const res = await json(`${t.url}/api/chat/conversations/${older.conversationId}`, 'PATCH', { title: '  Roadmap notes  ' });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ id: older.conversationId, title: 'Roadmap notes' });
    const after = await list('rn');
    expect(after.map((c) => [c.id, c.title])).toEqual([
      [newer.conversationId, before[0].title],
      [older.conversationId, 'Roadmap notes'],
    ]);
    expect(after[1].updatedAt).toBe(before[1].updatedAt);
  });

  it('a finished turn moves its conversation to the top of the list', async () => {
    const older = await turn('first topic', 'order');
    const newer = await turn('second topic', 'order');
    const before = await list('order');
    expect(before.map((c) => c.id)).toEqual([newer.conversationId, older.conversationId]);
    await turn('back to the first', 'order', older.conversationId);
    const after = await list('order');
    expect(after.map((c) => c.id)).toEqual([older.conversationId, newer.conversationId]);
    expect(Date.parse(after[0].updatedAt)).toBeGreaterThan(Date.parse(before[1].updatedAt));
  });

  it.each([
    [{}, /^title is required \(a string\)$/],
    [{ title: '' }, /title must not be empty/],
    [{ title: '   ' }, /title must not be empty/],
    [{ title: 7 }, /title must be a string/],
    [{ title: 'x'.repeat(121) }, /title must be at most 120 characters/],
    [{ title: 'ok', projectId: 'x' }, /^projectId is not allowed \(unknown field; accepted: title\)$/],
  ] as Array<[Record<string, unknown>, RegExp]>)('a bad rename body is a 400 that changes nothing (%#)', async (body, message) => {
    const { conversationId } = await turn('keep my title', 'bad');
    const res = await json(`${t.url}/api/chat/conversations/${conversationId}`, 'PATCH', body);
    expect(res.status).toBe(400);
    expect([(await res.json()).message].flat().join('; ')).toMatch(message);
    expect((await list('bad')).find((c) => c.id === conversationId)?.title).toBe('keep my title');
  });

  it('rename and delete of an unknown id are 404, of a malformed id 400', async () => {
    const unknown = randomUUID();
    expect((await json(`${t.url}/api/chat/conversations/${unknown}`, 'PATCH', { title: 'x' })).status).toBe(404);
    const del = await json(`${t.url}/api/chat/conversations/${unknown}`, 'DELETE');
    expect(del.status).toBe(404);
    expect((await del.json()).error).toBe('conversation_not_found');
    expect((await json(`${t.url}/api/chat/conversations/not-a-uuid`, 'DELETE')).status).toBe(400);
    expect((await json(`${t.url}/api/chat/conversations/not-a-uuid`, 'PATCH', { title: 'x' })).status).toBe(400);
  });

  it('delete removes the conversation, its messages, runs, run events and trace, and nothing of another conversation', async () => {
    const a1 = await turn('doomed one', 'del');
    const a2 = await turn('doomed two', 'del', a1.conversationId);
    const b = await turn('survivor', 'del');
    const doomed = [a1.requestId, a2.requestId];
    expect(await count('run_event_list', 'request_id', doomed)).toBeGreaterThan(0);
    expect((await traceOf(a1.requestId)).length).toBeGreaterThan(0);
    const bTrace = (await traceOf(b.requestId)).length;
    const bEvents = await count('run_event_list', 'request_id', [b.requestId]);

    const res = await json(`${t.url}/api/chat/conversations/${a1.conversationId}`, 'DELETE');
    expect(res.status).toBe(204);
    expect(await res.text()).toBe('');

    expect((await list('del')).map((c) => c.id)).toEqual([b.conversationId]);
    expect((await fetch(`${t.url}/api/chat/conversations/${a1.conversationId}/messages`)).status).toBe(404);
    for (const id of doomed) {
      expect((await fetch(`${t.url}/api/chat/runs/${id}`)).status).toBe(404);
      expect(await traceOf(id)).toEqual([]);
    }
    expect(await count('chat_messages', 'conversation_id', [a1.conversationId])).toBe(0);
    expect(await count('runs', 'request_id', doomed)).toBe(0);
    expect(await count('run_event_list', 'request_id', doomed)).toBe(0);
    expect(await count('trace_events', 'request_id', doomed)).toBe(0);

    // the other conversation is untouched
    expect((await (await fetch(`${t.url}/api/chat/conversations/${b.conversationId}/messages`)).json()).length).toBe(2);
    expect((await fetch(`${t.url}/api/chat/runs/${b.requestId}`)).status).toBe(200);
    expect((await traceOf(b.requestId)).length).toBe(bTrace);
    expect(await count('run_event_list', 'request_id', [b.requestId])).toBe(bEvents);

    // a second delete finds nothing
    expect((await json(`${t.url}/api/chat/conversations/${a1.conversationId}`, 'DELETE')).status).toBe(404);
  });

  it('refuses with 409 run_in_progress while a run streams (nothing deleted), and deletes once it was cancelled', async () => {
    llm.enqueue(respond.turn([{ text: 'one ' }, { text: 'two ' }, { text: 'three ' }, { text: 'four' }], { faults: { delayMs: 250 } }));
    let refused: Promise<Response> | undefined;
    const res = await sse(`${t.url}/api/chat/messages`, {
      body: { content: 'long answer', projectId: 'busy' },
      onEvent: (e: SseEvent) => {
        if (e.event !== 'chunk' || refused) return;
        refused = json(`${t.url}/api/chat/conversations/${e.data.conversationId}`, 'DELETE');
        // cancelled only after the refusal came back, so the refusal saw the run running
        void refused.then(() => json(`${t.url}/api/chat/runs/${e.data.requestId}/cancel`, 'POST', {}));
      },
    });
    const conflict = await refused!;
    expect(conflict.status).toBe(409);
    const body = await conflict.json();
    const { conversationId, requestId } = res.events[0].data as { conversationId: string; requestId: string };
    expect(body).toMatchObject({ error: 'run_in_progress', requestId });
    expect(body.message).toMatch(/cancel/);
    expect(res.events.at(-1)).toMatchObject({ event: 'done', data: { stopReason: 'cancelled' } });
    // the refusal deleted nothing: the partial answer is stored with its run and events
    const msgs = await (await fetch(`${t.url}/api/chat/conversations/${conversationId}/messages`)).json();
    expect(msgs.map((m: { role: string }) => m.role)).toEqual(['user', 'assistant']);
    expect(await count('run_event_list', 'request_id', [requestId])).toBe(res.events.length);

    expect((await json(`${t.url}/api/chat/conversations/${conversationId}`, 'DELETE')).status).toBe(204);
    expect(await count('runs', 'request_id', [requestId])).toBe(0);
    expect(await count('trace_events', 'request_id', [requestId])).toBe(0);
  });

  it('is atomic: a failure after the runs were deleted rolls everything back', async () => {
    const { conversationId, requestId } = await turn('survives a failed delete', 'atomic');
    const events = await count('run_event_list', 'request_id', [requestId]);
    const trace = (await traceOf(requestId)).length; // the trace route stores what is still queued first
    expect(trace).toBeGreaterThan(0);
    const repo = t.app.get(ConversationRepository);
    const spy = jest.spyOn(repo, 'deleteWithMessages').mockImplementationOnce(async (m) => {
      // the runs, their events and trace are already deleted inside the transaction here
      expect(Number((await m.query(`SELECT count(*)::int AS n FROM runs WHERE request_id = $1`, [requestId]))[0].n)).toBe(0);
      throw new Error('disk full');
    });
    try {
      expect((await json(`${t.url}/api/chat/conversations/${conversationId}`, 'DELETE')).status).toBe(500);
    } finally {
      spy.mockRestore();
    }
    expect((await list('atomic')).map((c) => c.id)).toEqual([conversationId]);
    expect(await count('runs', 'request_id', [requestId])).toBe(1);
    expect(await count('run_event_list', 'request_id', [requestId])).toBe(events);
    expect(await count('trace_events', 'request_id', [requestId])).toBe(trace);
    expect((await (await fetch(`${t.url}/api/chat/conversations/${conversationId}/messages`)).json()).length).toBe(2);
  });

  // PostgreSQL only: PGlite has one connection, so no second one can hold the lock meanwhile
  itOnPostgres('PGlite has one connection, so no second one can hold the lock', 'a turn whose conversation is deleted while the turn opens gets 404 and stores nothing', async () => {
    const { conversationId } = await turn('soon gone', 'gone');
    const qr = ds.createQueryRunner();
    await qr.connect();
    await qr.startTransaction();
    try {
      await qr.query('SELECT id FROM conversations WHERE id = $1 FOR UPDATE', [conversationId]);
      await qr.query('DELETE FROM conversations WHERE id = $1', [conversationId]);
      llm.enqueue(respond.turn([{ text: 'never' }]));
      const sent = json(`${t.url}/api/chat/messages`, 'POST', { content: 'one more', projectId: 'gone', conversationId });
      // the turn reads the conversation (still committed), then its opening statement waits for the lock
      await waitFor(async () => (await ds.query(`SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`)).length > 0, {
        what: "the turn's opening statement to wait for the conversation's lock",
      });
      await qr.commitTransaction();
      const res = await sent;
      expect(res.status).toBe(404);
      expect(await res.json()).toMatchObject({ statusCode: 404 });
    } finally {
      await qr.release();
    }
    expect(Number((await ds.query(`SELECT count(*)::int AS n FROM chat_messages WHERE content = 'one more'`))[0].n)).toBe(0);
    expect(llm.chatRequests).toHaveLength(1);
  });
});
