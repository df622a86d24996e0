import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { RunSweeperService } from '../../src/runs/run-sweeper.service';
import { startApp, startPeer, type TestApp } from '../support/app';
import { describeOnPostgres, onPostgres } from '../support/db';
import { ReplayServer, respond } from '../support/replay-server';
import { checkEnvelope, sse, type SseEvent } from '../support/sse-client';
import { waitFor } from '../support/wait-for';

/**
 * Issue #7, server side: cancel, pause/resume from a checkpoint, reconnect with Last-Event-ID,
 * lease expiry — on one instance (both databases), and across two instances on PostgreSQL.
 */
const env = (llm: ReplayServer, extra: Record<string, string> = {}) => ({
  LLM_PROVIDER: 'openai',
  LLM_BASE_URL: llm.openAiBaseUrl,
  LLM_MODEL: 'scripted-model',
  TWO_STAGE_ENABLED: 'true',
  ...extra,
});

function seedWorkspace(t: TestApp): void {
  mkdirSync(join(t.workspace, 'default', 'docs'), { recursive: true });
  writeFileSync(join(t.workspace, 'default', 'docs', 'roadmap.md'), '# Roadmap\nShip it.\n');
}

const post = (url: string, body: unknown) => fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
const textOf = (events: SseEvent[]) => events.filter((e) => e.event === 'chunk').map((e) => e.data.content).join('');

describe('run control on one instance', () => {
  let llm: ReplayServer;
  let t: TestApp;

  beforeAll(async () => {
    llm = await ReplayServer.start();
    t = await startApp(env(llm));
    seedWorkspace(t);
  });
  afterAll(async () => {
    await t.close();
    await llm.close();
  });
  beforeEach(() => llm.reset());

  it('cancel ends the live stream with done{cancelled}, aborts the model request, stores the partial answer; resume is then 409 run_cancelled', async () => {
    llm.enqueue(respond.turn([{ text: 'one ' }, { text: 'two ' }, { text: 'three ' }, { text: 'four ' }, { text: 'five' }], { faults: { delayMs: 300 } }));
    let cancel: Promise<Response> | undefined;
    const res = await sse(`${t.url}/api/chat/messages_two_stage`, {
      body: { content: 'count' },
      onEvent: (e) => {
        if (e.event === 'chunk' && !cancel) {
          cancel = post(`${t.url}/api/chat/runs/${e.data.requestId}/cancel`, {});
        }
      },
    });
    expect((await cancel!).status).toBe(202);
    // the model request was aborted, not left to finish
    await waitFor(() => llm.chatRequests[0].closedEarlyAt !== undefined, { what: 'the model request to close' });
    // before the model got to its last words (it sends one every 300 ms); latency is bench:run-control's job
    expect(llm.chatRequests[0].framesSent).toBeLessThan(5);
    const done = res.events.at(-1)!;
    expect(done.event).toBe('done');
    expect(done.data.stopReason).toBe('cancelled');
    expect(res.events.filter((e) => e.event === 'chunk').length).toBeLessThan(5);
    expect(textOf(res.events)).not.toContain('five');
    const requestId = res.events[0].data.requestId as string;
    const run = await (await fetch(`${t.url}/api/chat/runs/${requestId}`)).json();
    expect(run.status).toBe('cancelled');
    const msgs = await (await fetch(`${t.url}/api/chat/conversations/${res.events[0].data.conversationId}/messages`)).json();
    expect(msgs[1]).toMatchObject({ role: 'assistant', status: 'cancelled', content: textOf(res.events) });
    const resume = await post(`${t.url}/api/chat/messages_two_stage/resume`, { requestId, resumeFromPhaseIndex: 2 });
    expect(resume.status).toBe(409);
    expect((await resume.json()).error).toBe('run_cancelled');
    expect((await post(`${t.url}/api/chat/runs/${requestId}/cancel`, {})).status).toBe(409);
  });

  it('pauses right after a tool result, resumes from the checkpoint without re-running the tool, one answer stored', async () => {
    llm.enqueue(
      respond.turn([{ text: 'Reading the roadmap. ' }, { toolCall: { name: 'read_file', args: { path: 'docs/roadmap.md' } } }], { faults: { delayMs: 150 } }),
      respond.turn([{ text: 'The roadmap says: ship it.' }]),
    );
    let pause: Promise<Response> | undefined;
    const first = await sse(`${t.url}/api/chat/messages_two_stage`, {
      body: { content: 'Summarize the roadmap' },
      onEvent: (e) => {
        if (e.event === 'chunk' && !pause) pause = post(`${t.url}/api/chat/runs/${e.data.requestId}/pause`, {});
      },
    });
    expect((await pause!).status).toBe(202);
    checkEnvelope(first.events);
    const last = first.events.at(-1)!;
    expect(last.event).toBe('paused');
    expect(first.events.filter((e) => e.event === 'done')).toHaveLength(0);
    const requestId = first.events[0].data.requestId as string;
    expect(last.data.resumeFromPhaseIndex).toBe(2);
    const run = await (await fetch(`${t.url}/api/chat/runs/${requestId}`)).json();
    expect(run).toMatchObject({ status: 'paused', checkpoints: [2] });
    expect(llm.chatRequests).toHaveLength(1);

    // a checkpoint that does not exist, then the real resume
    expect((await post(`${t.url}/api/chat/messages_two_stage/resume`, { requestId, resumeFromPhaseIndex: 7 })).status).toBe(404);
    const second = await sse(`${t.url}/api/chat/messages_two_stage/resume`, { body: { requestId, resumeFromPhaseIndex: 2 } });
    expect(second.status).toBe(200);
    expect(second.events[0].event).toBe('start');
    expect(second.events[0].data).toMatchObject({ resumed: true, resumeFromPhaseIndex: 2 });
    // seq continues where the paused stream stopped
    expect(Number(second.events[0].id)).toBe(Number(last.id) + 1);
    checkEnvelope([...first.events, ...second.events]);
    const done = second.events.at(-1)!;
    expect(done.data).toMatchObject({ stopReason: 'final_answer' });
    expect(done.data.fullContent).toBe(textOf(first.events) + textOf(second.events));
    const results = await (await fetch(`${t.url}/api/trace?requestId=${requestId}&type=tool_result`)).json();
    expect(results).toHaveLength(1);
    const types = (await (await fetch(`${t.url}/api/trace?requestId=${requestId}`)).json()).map((x: { type: string }) => x.type);
    expect(types).toEqual(expect.arrayContaining(['run_paused', 'run_resumed', 'run_completed']));
    const msgs = await (await fetch(`${t.url}/api/chat/conversations/${first.events[0].data.conversationId}/messages`)).json();
    expect(msgs.filter((m: { role: string }) => m.role === 'assistant')).toEqual([
      expect.objectContaining({ status: 'complete', content: 'Reading the roadmap. The roadmap says: ship it.' }),
    ]);
    // the whole run, replayed from the start, is both streams back to back
    const replay = await sse(`${t.url}/api/chat/runs/${requestId}/events`);
    expect(replay.events.map((e) => [e.id, e.event])).toEqual([...first.events, ...second.events].map((e) => [e.id, e.event]));
    // a finished run is never resumed again (issue 29: 409 run_finished naming the fork route);
    // its checkpoint forks a new run on the fork route (issue 13)
    const refused = await post(`${t.url}/api/chat/messages_two_stage/resume`, { requestId, resumeFromPhaseIndex: 2 });
    expect(refused.status).toBe(409);
    expect(await refused.json()).toMatchObject({ error: 'run_finished', checkpoints: [2], message: expect.stringContaining(`/api/chat/runs/${requestId}/fork`) });
    llm.enqueue(respond.turn([{ text: 'Again.' }]));
    const again = await sse(`${t.url}/api/chat/runs/${requestId}/fork`, { body: { fromPhaseIndex: 2 } });
    expect(again.events[0].data).toMatchObject({ parentRequestId: requestId });
    expect(again.events[0].data.requestId).not.toBe(requestId);
    const replayAfter = await sse(`${t.url}/api/chat/runs/${requestId}/events`);
    expect(replayAfter.body).toBe(replay.body);
  });

  it('resumes in place only from the latest checkpoint; an older one is refused (fork it instead), so a completed tool never runs again in one run', async () => {
    llm.enqueue(
      respond.turn([{ toolCall: { name: 'list_files', args: {} } }], { faults: { delayMs: 50 } }),
      respond.turn([{ toolCall: { name: 'read_file', args: { path: 'docs/roadmap.md' } } }], { faults: { delayMs: 50 } }),
    );
    const pauseAt = (url: string, body: unknown) =>
      sse(url, { body, onEvent: (e) => (e.event === 'start' ? void post(`${t.url}/api/chat/runs/${e.data.requestId}/pause`, {}) : undefined) });
    const first = await pauseAt(`${t.url}/api/chat/messages_two_stage`, { content: 'look' });
    const requestId = first.events[0].data.requestId as string;
    expect(first.events.at(-1)!.data.resumeFromPhaseIndex).toBe(2);
    const second = await pauseAt(`${t.url}/api/chat/messages_two_stage/resume`, { requestId, resumeFromPhaseIndex: 2 });
    expect(second.events.at(-1)).toMatchObject({ event: 'paused', data: { resumeFromPhaseIndex: 4 } });
    // issue 29: resuming from the older checkpoint is refused and names the fork route
    const older = await post(`${t.url}/api/chat/messages_two_stage/resume`, { requestId, resumeFromPhaseIndex: 2 });
    expect(older.status).toBe(409);
    expect(await older.json()).toMatchObject({ error: 'run_not_resumable', checkpoints: [2, 4], message: expect.stringContaining(`/api/chat/runs/${requestId}/fork`) });
    // issue 13: forked from it, a new run continues, and the parent stays paused at phase 4
    llm.enqueue(respond.turn([{ text: 'Forked.' }]));
    const fork = await sse(`${t.url}/api/chat/runs/${requestId}/fork`, { body: { fromPhaseIndex: 2 } });
    expect(fork.events[0].data).toMatchObject({ resumed: true, resumeFromPhaseIndex: 2, parentRequestId: requestId });
    expect(fork.events[0].data.requestId).not.toBe(requestId);
    expect(await (await fetch(`${t.url}/api/chat/runs/${requestId}`)).json()).toMatchObject({ status: 'paused', checkpoints: [2, 4] });
    llm.enqueue(respond.turn([{ text: 'Done.' }]));
    const last = await sse(`${t.url}/api/chat/messages_two_stage/resume`, { body: { requestId, resumeFromPhaseIndex: 4 } });
    expect(last.events.at(-1)!.data.stopReason).toBe('final_answer');
    const results = await (await fetch(`${t.url}/api/trace?requestId=${requestId}&type=tool_result`)).json();
    expect(results).toHaveLength(2);
  });

  it('refuses to pause a unified run (it has no pause point) with a 409 that says so', async () => {
    llm.enqueue(respond.turn([{ text: 'a ' }, { text: 'b ' }, { text: 'c' }], { faults: { delayMs: 200 } }));
    let pause: Promise<Response> | undefined;
    const res = await sse(`${t.url}/api/chat/messages`, {
      body: { content: 'hello' },
      onEvent: (e) => {
        if (e.event === 'start') pause = post(`${t.url}/api/chat/runs/${e.data.requestId}/pause`, {});
      },
    });
    const answer = await pause!;
    expect(answer.status).toBe(409);
    expect((await answer.json()).message).toMatch(/only two-stage runs pause/);
    expect(res.events.at(-1)!.data.stopReason).toBe('final_answer');
  });

  it('lets exactly one of two concurrent resumes win', async () => {
    llm.enqueue(respond.turn([{ toolCall: { name: 'list_files', args: {} } }], { faults: { delayMs: 100 } }), respond.turn([{ text: 'Listed.' }], { faults: { delayMs: 100 } }));
    const first = await sse(`${t.url}/api/chat/messages_two_stage`, {
      body: { content: 'list' },
      onEvent: (e) => {
        if (e.event === 'start') void post(`${t.url}/api/chat/runs/${e.data.requestId}/pause`, {});
      },
    });
    expect(first.events.at(-1)!.event).toBe('paused');
    const requestId = first.events[0].data.requestId as string;
    const [a, b] = await Promise.all([
      sse(`${t.url}/api/chat/messages_two_stage/resume`, { body: { requestId, resumeFromPhaseIndex: 2 } }),
      sse(`${t.url}/api/chat/messages_two_stage/resume`, { body: { requestId, resumeFromPhaseIndex: 2 } }),
    ]);
    expect([a.status, b.status].sort()).toEqual([200, 409]);
    const winner = a.status === 200 ? a : b;
    expect(winner.events.at(-1)!.data.stopReason).toBe('final_answer');
    expect(JSON.parse((a.status === 409 ? a : b).body).error).toBe('resume_in_progress');
  });

  it('refuses to resume from a stored checkpoint it cannot read, and leaves the run paused', async () => {
    llm.enqueue(respond.turn([{ toolCall: { name: 'list_files', args: {} } }], { faults: { delayMs: 100 } }));
    const first = await sse(`${t.url}/api/chat/messages_two_stage`, {
      body: { content: 'list' },
      onEvent: (e) => {
        if (e.event === 'start') void post(`${t.url}/api/chat/runs/${e.data.requestId}/pause`, {});
      },
    });
    const requestId = first.events[0].data.requestId as string;
    await t.app.get(DataSource).query(`UPDATE runs SET checkpoint = jsonb_set(checkpoint, '{byPhase,2,schemaVersion}', '99') WHERE request_id = $1`, [requestId]);
    const res = await post(`${t.url}/api/chat/messages_two_stage/resume`, { requestId, resumeFromPhaseIndex: 2 });
    expect(res.status).toBe(409);
    expect((await res.json()).message).toMatch(/unsupported checkpoint schemaVersion 99/);
    expect((await (await fetch(`${t.url}/api/chat/runs/${requestId}`)).json()).status).toBe('paused');
  });

  it('replays every event after Last-Event-ID to a client that dropped a detached run', async () => {
    llm.enqueue(respond.turn(Array.from({ length: 20 }, (_, i) => ({ text: `w${i} ` })), { faults: { delayMs: 60 } }));
    const dropped = await sse(`${t.url}/api/chat/messages_two_stage`, {
      body: { content: 'long answer', options: { detach: true } },
      onEvent: (e) => (Number(e.id) === 5 ? 'close' : undefined),
    });
    expect(dropped.events.map((e) => Number(e.id))).toEqual([1, 2, 3, 4, 5]);
    const requestId = dropped.events[0].data.requestId as string;
    const rest = await sse(`${t.url}/api/chat/runs/${requestId}/events`, { headers: { 'last-event-id': '5' } });
    expect(rest.status).toBe(200);
    expect(Number(rest.events[0].id)).toBe(6);
    checkEnvelope([...dropped.events, ...rest.events]);
    const done = rest.events.at(-1)!;
    expect(done.event).toBe('done');
    expect(done.data.stopReason).toBe('final_answer');
    expect(textOf([...dropped.events, ...rest.events])).toBe(Array.from({ length: 20 }, (_, i) => `w${i} `).join(''));
    // ?lastEventId= works too, and a finished run replays and ends
    const tail = await sse(`${t.url}/api/chat/runs/${requestId}/events?lastEventId=${Number(done.id) - 1}`);
    expect(tail.events.map((e) => e.event)).toEqual(['done']);
    // an ended run with nothing after Last-Event-ID: 204, so an EventSource stops reconnecting
    const nothing = await fetch(`${t.url}/api/chat/runs/${requestId}/events`, { headers: { 'last-event-id': String(done.id) } });
    expect(nothing.status).toBe(204);
    expect(await nothing.text()).toBe('');
  });

  it('answers unknown runs and bad Last-Event-IDs before streaming', async () => {
    expect((await fetch(`${t.url}/api/chat/runs/00000000-0000-4000-8000-000000000000/events`)).status).toBe(404);
    expect((await fetch(`${t.url}/api/chat/runs/00000000-0000-4000-8000-000000000000`)).status).toBe(404);
    expect((await post(`${t.url}/api/chat/runs/00000000-0000-4000-8000-000000000000/cancel`, {})).status).toBe(404);
    expect((await post(`${t.url}/api/chat/messages_two_stage/resume`, { requestId: '00000000-0000-4000-8000-000000000000', resumeFromPhaseIndex: 2 })).status).toBe(404);
    expect((await post(`${t.url}/api/chat/messages_two_stage/resume`, { requestId: 'x', resumeFromPhaseIndex: 0 })).status).toBe(400);
    const res = await sse(`${t.url}/api/chat/messages_two_stage`, { body: { content: 'x' } });
    expect((await fetch(`${t.url}/api/chat/runs/${res.events[0].data.requestId}/events`, { headers: { 'last-event-id': 'abc' } })).status).toBe(400);
  });

  it('closes a run whose instance died: failed, answer rebuilt from its events, followers see it end', async () => {
    const ds = t.app.get(DataSource);
    llm.enqueue(respond.turn([{ text: 'partial ' }, { text: 'answer' }]));
    const res = await sse(`${t.url}/api/chat/messages_two_stage`, { body: { content: 'x' } });
    const conversationId = res.events[0].data.conversationId as string;
    // a run left "running" by an instance that vanished after streaming two chunks
    const requestId = '11111111-1111-4111-8111-111111111111';
    await ds.query(
      `INSERT INTO runs (request_id, conversation_id, project_id, protocol, status, lease_owner, lease_expires_at) VALUES ($1, $2, 'default', 'two-stage', 'running', 'dead-host', now() - interval '1 minute')`,
      [requestId, conversationId],
    );
    const base = { requestId, projectId: 'default', conversationId, phase: 'action_phase', phaseIndex: 1, cycleIndex: 0 };
    await ds.query(`INSERT INTO run_events (request_id, seq, type, data) VALUES ($1, 1, 'start', $2), ($1, 2, 'chunk', $3), ($1, 3, 'chunk', $4)`, [
      requestId,
      JSON.stringify({ ...base, seq: 1, protocol: 'two-stage' }),
      JSON.stringify({ ...base, seq: 2, content: 'Half an ' }),
      JSON.stringify({ ...base, seq: 3, content: 'answer' }),
    ]);
    let replayed = 0;
    const follower = sse(`${t.url}/api/chat/runs/${requestId}/events`, { headers: { 'last-event-id': '1' }, onEvent: () => void replayed++ });
    // the follower is attached once the stored chunks after Last-Event-ID reached it
    await waitFor(() => replayed >= 2, { what: 'the follower to receive the two stored chunks' });
    expect(await t.app.get(RunSweeperService).sweep()).toEqual([requestId]);
    const followed = await follower;
    expect(followed.events.map((e) => e.event)).toEqual(['chunk', 'chunk', 'error', 'done']);
    expect(followed.events.at(-1)!.data).toMatchObject({ stopReason: 'error', fullContent: 'Half an answer' });
    const run = await (await fetch(`${t.url}/api/chat/runs/${requestId}`)).json();
    expect(run.status).toBe('failed');
    const msgs = await (await fetch(`${t.url}/api/chat/conversations/${conversationId}/messages`)).json();
    expect(msgs.find((m: { requestId: string }) => m.requestId === requestId)).toMatchObject({ status: 'error', content: 'Half an answer' });
    expect(await t.app.get(RunSweeperService).sweep()).toEqual([]);
  });
});

describeOnPostgres('two instances share one database only on a PostgreSQL server', 'run control across two instances on one PostgreSQL', () => {
  let llm: ReplayServer;
  let a: TestApp;
  let b: TestApp;

  beforeAll(async () => {
    llm = await ReplayServer.start();
    a = await startApp(env(llm));
    seedWorkspace(a);
    b = await startPeer(a, env(llm));
  });
  afterAll(async () => {
    await b.app.close();
    await a.close();
    await llm.close();
  });
  beforeEach(() => llm.reset());

  it('a cancel sent to B stops a run streaming from A within a second and aborts its model request', async () => {
    llm.enqueue(respond.turn(Array.from({ length: 40 }, (_, i) => ({ text: `t${i} ` })), { faults: { delayMs: 100 } }));
    let sent = false;
    const res = await sse(`${a.url}/api/chat/messages_two_stage`, {
      body: { content: 'stream slowly' },
      onEvent: (e) => {
        if (e.event === 'chunk' && !sent) {
          sent = true;
          void post(`${b.url}/api/chat/runs/${e.data.requestId}/cancel`, {});
        }
      },
    });
    expect(res.events.at(-1)!.data.stopReason).toBe('cancelled');
    // issue #7: within a second (p95 measured by bench:run-control). Counted in the model's words,
    // one per 100 ms: fewer than 20 means it stopped well within 2 s, the turn itself has 40
    expect(res.events.filter((e) => e.event === 'chunk').length).toBeLessThan(20);
    expect(textOf(res.events)).not.toContain('t39');
    // A's request to the model was aborted
    await waitFor(() => llm.chatRequests[0].closedEarlyAt !== undefined, { what: "A's model request to close" });
    expect(llm.chatRequests[0].framesSent).toBeLessThan(20);
  });

  it('a run paused on A resumes on B and completes with each tool run once', async () => {
    llm.enqueue(
      respond.turn([{ text: 'Checking. ' }, { toolCall: { name: 'read_file', args: { path: 'docs/roadmap.md' } } }], { faults: { delayMs: 100 } }),
      respond.turn([{ toolCall: { name: 'list_files', args: { path: 'docs' } } }]),
      respond.turn([{ text: 'Done on B.' }]),
    );
    let asked = false;
    const first = await sse(`${a.url}/api/chat/messages_two_stage`, {
      body: { content: 'summarize' },
      onEvent: (e) => {
        if (e.event === 'chunk' && !asked) {
          asked = true;
          void post(`${b.url}/api/chat/runs/${e.data.requestId}/pause`, {});
        }
      },
    });
    expect(first.events.at(-1)!.event).toBe('paused');
    const requestId = first.events[0].data.requestId as string;
    const second = await sse(`${b.url}/api/chat/messages_two_stage/resume`, { body: { requestId, resumeFromPhaseIndex: first.events.at(-1)!.data.resumeFromPhaseIndex } });
    expect(second.events.at(-1)!.data.stopReason).toBe('final_answer');
    const results = await (await fetch(`${b.url}/api/trace?requestId=${requestId}&type=tool_result`)).json();
    expect(results.map((r: { details: { name?: string; toolName?: string } }) => r.details.name ?? r.details.toolName)).toEqual(['read_file', 'list_files']);
  });

  it('a client that drops after event 5 reconnects to B and receives 6… to done, nothing missing or repeated', async () => {
    llm.enqueue(respond.turn(Array.from({ length: 30 }, (_, i) => ({ text: `x${i} ` })), { faults: { delayMs: 50 } }));
    const dropped = await sse(`${a.url}/api/chat/messages_two_stage`, {
      body: { content: 'stream', options: { detach: true } },
      onEvent: (e) => (Number(e.id) === 5 ? 'close' : undefined),
    });
    const requestId = dropped.events[0].data.requestId as string;
    const rest = await sse(`${b.url}/api/chat/runs/${requestId}/events`, { headers: { 'last-event-id': '5' } });
    const all = [...dropped.events, ...rest.events];
    checkEnvelope(all);
    expect(all.map((e) => Number(e.id))).toEqual(all.map((_, i) => i + 1));
    expect(rest.events.at(-1)!.event).toBe('done');
    expect(textOf(all)).toBe(Array.from({ length: 30 }, (_, i) => `x${i} `).join(''));
    await waitFor(async () => (await (await fetch(`${b.url}/api/chat/runs/${requestId}`)).json()).status === 'completed', { what: 'the run to read completed on B' });
  });
});

describe('shutdown during a turn', () => {
  it('cancels live runs before waiting for open streams: done{cancelled}, partial answer stored', async () => {
    const llm = await ReplayServer.start();
    const t = await startApp(env(llm));
    const shared = { databaseUrl: t.databaseUrl };
    try {
      llm.enqueue(respond.turn(Array.from({ length: 100 }, (_, i) => ({ text: `s${i} ` })), { faults: { delayMs: 100 } }));
      let closing: Promise<void> | null = null;
      const res = await sse(`${t.url}/api/chat/messages_two_stage`, {
        body: { content: 'long', options: { detach: true } },
        onEvent: (e) => {
          if (e.event === 'chunk' && !closing) closing = t.app.close();
        },
      });
      await closing;
      // the model was cut off, not left to finish its 100 words (~10 s at one per 100 ms)
      expect(res.events.filter((e) => e.event === 'chunk').length).toBeLessThan(50);
      expect(llm.chatRequests[0].framesSent).toBeLessThan(50);
      expect(res.events.at(-1)!.event).toBe('done');
      expect(res.events.at(-1)!.data.stopReason).toBe('cancelled');
      if (onPostgres()) {
        // the stored answer survives the shutdown (PGlite in memory does not survive the app)
        const again = await startApp(env(llm), shared);
        try {
          const msgs = await (await fetch(`${again.url}/api/chat/conversations/${res.events[0].data.conversationId}/messages`)).json();
          expect(msgs[1]).toMatchObject({ role: 'assistant', status: 'cancelled' });
        } finally {
          await again.app.close();
        }
      }
    } finally {
      await t.close().catch(() => undefined);
      await llm.close();
    }
  });
});
