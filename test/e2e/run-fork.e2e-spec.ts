import { DataSource } from 'typeorm';
import { ToolRegistryService } from '../../src/tools/tool-registry.service';
import { startApp, startPeer, type TestApp } from '../support/app';
import { onPostgres } from '../support/db';
import { ReplayServer, respond } from '../support/replay-server';
import { checkEnvelope, sse, type SseEvent } from '../support/sse-client';
import { probeTool } from '../support/test-tools';

const post = (url: string, body: unknown) => fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
const textOf = (events: SseEvent[]) => events.filter((e) => e.event === 'chunk').map((e) => e.data.content).join('');
const call = (name: string, step: string, id: string) => respond.turn([{ toolCall: { name, args: { step }, id } }]);
const forkUrl = (t: TestApp, requestId: string) => `${t.url}/api/chat/runs/${requestId}/fork`;

/**
 * Issue 13, item 9, and issue 29: `POST /api/chat/runs/:requestId/fork` continues a new run from
 * any checkpoint of a paused or ended run; the parent is left exactly as it was. The resume route
 * no longer forks: it refuses a finished run or an older checkpoint and names the fork route.
 * Instance A runs the parent, instance B forks it (on PostgreSQL two instances share the
 * database; PGlite in memory cannot be shared, so there A and B are one instance).
 */
describe(`forking a run from an earlier checkpoint (${onPostgres() ? 'two instances' : 'one instance'})`, () => {
  let llm: ReplayServer;
  let a: TestApp;
  let b: TestApp;
  const calls: string[] = [];

  beforeAll(async () => {
    llm = await ReplayServer.start();
    const env = { LLM_PROVIDER: 'openai', LLM_BASE_URL: llm.openAiBaseUrl, LLM_MODEL: 'scripted-model', TWO_STAGE_ENABLED: 'true' };
    a = await startApp(env);
    b = onPostgres() ? await startPeer(a, env) : a;
    for (const t of new Set([a, b])) {
      const registry = t.app.get(ToolRegistryService);
      registry.register(probeTool('probe_first', calls));
      registry.register(probeTool('probe_second', calls));
    }
  });
  afterAll(async () => {
    if (b !== a) await b.app.close();
    await a.close();
    await llm.close();
  });
  beforeEach(() => {
    llm.reset();
    calls.length = 0;
  });

  /** A finished two-stage turn on A with two tool phases (checkpoints 2 and 4). */
  const finishedParent = async () => {
    llm.enqueue(
      respond.turn([{ text: 'Looking it up. ' }, { toolCall: { name: 'probe_first', args: { step: 'one' }, id: 'c1' } }]),
      call('probe_second', 'two', 'c2'),
      respond.turn([{ text: 'Parent answer.' }]),
    );
    const parent = await sse(`${a.url}/api/chat/messages_two_stage`, { body: { content: 'Find it' } });
    expect(parent.events.at(-1)!.data.stopReason).toBe('final_answer');
    expect(calls).toEqual(['probe_first:one', 'probe_second:two']);
    const requestId = parent.events[0].data.requestId as string;
    const conversationId = parent.events[0].data.conversationId as string;
    return { parent, requestId, conversationId };
  };

  /** Everything a client can read about a run and its answer, as bytes. */
  const snapshot = async (requestId: string, conversationId: string) => {
    const run = (await (await fetch(`${b.url}/api/chat/runs/${requestId}`)).json()) as Record<string, unknown>;
    const { forks, ...status } = run;
    const events = await (await fetch(`${b.url}/api/chat/runs/${requestId}/events`)).text();
    const messages = (await (await fetch(`${b.url}/api/chat/conversations/${conversationId}/messages`)).json()) as Array<Record<string, unknown>>;
    const message = JSON.stringify(messages.find((m) => m.requestId === requestId && m.role === 'assistant'));
    return { status: JSON.stringify(status), events, message, forks, messages };
  };

  it('fork from phase 2 of a finished run: a new linked run, the phase-2 tool not run again, the parent unchanged', async () => {
    const { parent, requestId, conversationId } = await finishedParent();
    const before = await snapshot(requestId, conversationId);
    expect(JSON.parse(before.status)).toMatchObject({ status: 'completed', checkpoints: [2, 4], parentRequestId: null });
    expect(before.forks).toEqual([]);
    calls.length = 0;
    const sentBefore = llm.chatRequests.length;

    // issue 29: the resume route no longer forks a finished run; its refusal names the fork route
    const refused = await post(`${b.url}/api/chat/messages_two_stage/resume`, { requestId, resumeFromPhaseIndex: 2 });
    expect(refused.status).toBe(409);
    const refusal = await refused.json();
    expect(refusal).toMatchObject({ error: 'run_finished', checkpoints: [2, 4] });
    expect(refusal.message).toContain(`POST /api/chat/runs/${requestId}/fork`);
    expect(llm.chatRequests.length).toBe(sentBefore);

    // the fork's model first asks for the phase-2 call again (refused: it ran before the
    // checkpoint), then takes another path than the parent did
    llm.enqueue(call('probe_first', 'one', 'f1'), call('probe_second', 'three', 'f2'), respond.turn([{ text: 'Fork answer.' }]));
    const fork = await sse(forkUrl(b, requestId), { body: { fromPhaseIndex: 2 } });
    expect(fork.status).toBe(200);
    checkEnvelope(fork.events);
    const start = fork.events[0];
    const forkId = start.data.requestId as string;
    expect(start).toMatchObject({ event: 'start', id: '1', data: { resumed: true, resumeFromPhaseIndex: 2, parentRequestId: requestId, conversationId } });
    expect(forkId).not.toBe(requestId);
    const done = fork.events.at(-1)!;
    expect(done.data.stopReason).toBe('final_answer');

    // counted at the tool: the phase-2 tool did not run again, the fork's own tool did
    expect(calls).toEqual(['probe_second:three']);
    expect(fork.events.filter((e) => e.event === 'tool_progress' && e.data.action === 'refused').map((e) => e.data.tool)).toEqual(['probe_first']);
    // the fork's first model call continued from the checkpoint: it saw the phase-2 result, not the phase-4 one
    const firstForkCall = JSON.stringify(llm.chatRequests[sentBefore].body.messages);
    expect(firstForkCall).toContain('probe_first result for one');
    expect(firstForkCall).not.toContain('probe_second result for two');

    // the fork's answer starts with what the parent had streamed up to the checkpoint
    expect(done.data.fullContent).toBe(`Looking it up. ${textOf(fork.events)}`);
    expect(done.data.fullContent).toContain('Fork answer.');
    expect(done.data.fullContent).not.toContain('Parent answer.');

    const forkRun = await (await fetch(`${a.url}/api/chat/runs/${forkId}`)).json();
    expect(forkRun).toMatchObject({ status: 'completed', conversationId, parentRequestId: requestId, forkedFromPhaseIndex: 2, forks: [] });

    // the parent: status, events and stored answer byte-identical; it now lists its fork
    const after = await snapshot(requestId, conversationId);
    expect(after.status).toBe(before.status);
    expect(after.events).toBe(before.events);
    expect(after.message).toBe(before.message);
    expect(after.forks).toEqual([{ requestId: forkId, fromPhaseIndex: 2 }]);
    expect(textOf(parent.events)).toContain('Parent answer.');

    // the conversation keeps both answers, the fork's naming its parent
    expect(after.messages.map((m) => [m.role, m.requestId, m.parentRequestId ?? null])).toEqual([
      ['user', requestId, null],
      ['assistant', requestId, null],
      ['assistant', forkId, requestId],
    ]);
    expect(after.messages[2]).toMatchObject({ content: done.data.fullContent, status: 'complete' });

    // the next turn goes on from the fork's answer: the model is not told the replaced one
    llm.enqueue(respond.turn([{ text: 'Next.' }]));
    const next = await sse(`${a.url}/api/chat/messages_two_stage`, { body: { content: 'And then?', conversationId } });
    expect(next.events.at(-1)!.data.stopReason).toBe('final_answer');
    const history = JSON.stringify(llm.chatRequests.at(-1)!.body.messages);
    expect(history).toContain('Fork answer.');
    expect(history).not.toContain('Parent answer.');

    // deleting the conversation takes the parent and its fork with it
    expect((await fetch(`${b.url}/api/chat/conversations/${conversationId}`, { method: 'DELETE' })).status).toBe(204);
    expect((await fetch(`${a.url}/api/chat/runs/${requestId}`)).status).toBe(404);
    expect((await fetch(`${a.url}/api/chat/runs/${forkId}`)).status).toBe(404);
  });

  it('a fork paused and resumed in place, then forked again, keeps the text its ancestors streamed before their checkpoints', async () => {
    const { requestId, conversationId } = await finishedParent();
    calls.length = 0;
    llm.enqueue(respond.turn([{ toolCall: { name: 'probe_second', args: { step: 'three' }, id: 'f1' } }], { faults: { delayMs: 100 } }));
    const paused = await sse(forkUrl(b, requestId), {
      body: { fromPhaseIndex: 2 },
      onEvent: (e) => (e.event === 'start' ? void post(`${b.url}/api/chat/runs/${e.data.requestId}/pause`, {}) : undefined),
    });
    expect(paused.events.at(-1)).toMatchObject({ event: 'paused', data: { resumeFromPhaseIndex: 4 } });
    const forkId = paused.events[0].data.requestId as string;

    // its latest checkpoint resumes the fork in place, on the other instance
    llm.enqueue(respond.turn([{ text: 'Fork done.' }]));
    const resumed = await sse(`${a.url}/api/chat/messages_two_stage/resume`, { body: { requestId: forkId, resumeFromPhaseIndex: 4 } });
    expect(resumed.events[0].data).toMatchObject({ requestId: forkId, resumeFromPhaseIndex: 4 });
    expect(resumed.events[0].data.parentRequestId).toBeUndefined();
    expect(resumed.events.at(-1)!.data.fullContent).toBe(`Looking it up. ${textOf(paused.events)}${textOf(resumed.events)}`);

    // a fork of the fork starts with both ancestors' text
    llm.enqueue(respond.turn([{ text: 'Second fork.' }]));
    const again = await sse(forkUrl(b, forkId), { body: { fromPhaseIndex: 4 } });
    expect(again.events[0].data.parentRequestId).toBe(forkId);
    expect(again.events.at(-1)!.data.fullContent).toBe(`Looking it up. ${textOf(paused.events)}${textOf(again.events)}`);
    expect(calls).toEqual(['probe_second:three']);

    const messages = (await (await fetch(`${a.url}/api/chat/conversations/${conversationId}/messages`)).json()) as Array<Record<string, unknown>>;
    expect(messages.filter((m) => m.role === 'assistant').map((m) => [m.requestId, m.parentRequestId])).toEqual([
      [requestId, null],
      [forkId, requestId],
      [again.events[0].data.requestId, forkId],
    ]);
  });

  it('a paused fork that is cancelled stores its answer with its parent\'s text and link', async () => {
    const { requestId, conversationId } = await finishedParent();
    llm.enqueue(respond.turn([{ text: 'Trying again. ' }, { toolCall: { name: 'probe_second', args: { step: 'four' }, id: 'f1' } }], { faults: { delayMs: 100 } }));
    const paused = await sse(forkUrl(b, requestId), {
      body: { fromPhaseIndex: 2 },
      onEvent: (e) => (e.event === 'start' ? void post(`${b.url}/api/chat/runs/${e.data.requestId}/pause`, {}) : undefined),
    });
    expect(paused.events.at(-1)!.event).toBe('paused');
    const forkId = paused.events[0].data.requestId as string;
    expect((await post(`${a.url}/api/chat/runs/${forkId}/cancel`, {})).status).toBe(202);
    const messages = (await (await fetch(`${a.url}/api/chat/conversations/${conversationId}/messages`)).json()) as Array<Record<string, unknown>>;
    expect(messages.find((m) => m.requestId === forkId)).toMatchObject({ status: 'cancelled', content: 'Looking it up. Trying again. ', parentRequestId: requestId });
  });

  it('refuses a running run, a unified run, bad input, an unknown run or checkpoint, changing nothing', async () => {
    const { requestId, conversationId } = await finishedParent();
    const before = await snapshot(requestId, conversationId);
    const sent = llm.chatRequests.length;
    const refusal = async (res: Response) => ({ status: res.status, ...((await res.json()) as Record<string, unknown>) });

    expect(await refusal(await post(forkUrl(b, requestId), { fromPhaseIndex: 3 }))).toMatchObject({ status: 404, error: 'checkpoint_not_found', checkpoints: [2, 4] });
    expect(await refusal(await post(forkUrl(b, '00000000-0000-4000-8000-000000000000'), { fromPhaseIndex: 2 }))).toMatchObject({ status: 404, error: 'run_not_found' });
    for (const [id, body] of [
      [requestId, { fromPhaseIndex: 0 }],
      [requestId, { fromPhaseIndex: '2' }],
      [requestId, {}],
      [requestId, { fromPhaseIndex: 2, resumeFromPhaseIndex: 2 }],
      ['not-a-uuid', { fromPhaseIndex: 2 }],
    ] as const) {
      expect(await refusal(await post(forkUrl(b, id), body))).toMatchObject({ status: 400 });
    }

    // a finished run that ran no tool has no checkpoint to resume or fork from
    llm.enqueue(respond.turn([{ text: 'No tools.' }]));
    const plain = await sse(`${a.url}/api/chat/messages_two_stage`, { body: { content: 'hi', conversationId } });
    const plainId = plain.events[0].data.requestId as string;
    expect(await refusal(await post(forkUrl(b, plainId), { fromPhaseIndex: 2 }))).toMatchObject({ status: 404, error: 'checkpoint_not_found', checkpoints: [] });
    expect(await refusal(await post(`${b.url}/api/chat/messages_two_stage/resume`, { requestId: plainId, resumeFromPhaseIndex: 2 }))).toMatchObject({
      status: 409,
      error: 'run_finished',
      checkpoints: [],
    });

    // a unified run keeps no checkpoints
    llm.enqueue(respond.turn([{ text: 'Unified.' }]));
    const unified = await sse(`${a.url}/api/chat/messages`, { body: { content: 'hi', conversationId } });
    expect(await refusal(await post(forkUrl(b, unified.events[0].data.requestId as string), { fromPhaseIndex: 2 }))).toMatchObject({ status: 409, error: 'run_not_resumable' });

    // a running run (its model stalls after one chunk until it is cancelled): pause or cancel it first
    llm.enqueue(respond.turn([{ text: 'Thinking ' }, { text: 'it over.' }], { faults: { stallAfter: 2 } }));
    let whileRunning: Promise<Record<string, unknown>> | undefined;
    const running = await sse(`${a.url}/api/chat/messages_two_stage`, {
      body: { content: 'take your time', conversationId },
      onEvent: (e) => {
        if (e.event !== 'chunk' || whileRunning) return;
        const id = e.data.requestId as string;
        whileRunning = post(forkUrl(b, id), { fromPhaseIndex: 1 }).then(async (res) => {
          const answer = await refusal(res);
          await post(`${a.url}/api/chat/runs/${id}/cancel`, {});
          return answer;
        });
      },
    });
    expect(await whileRunning).toMatchObject({ status: 409, error: 'run_in_progress' });
    expect(running.events.at(-1)!.data.stopReason).toBe('cancelled');

    const after = await snapshot(requestId, conversationId);
    expect([after.status, after.events, after.message]).toEqual([before.status, before.events, before.message]);
    expect(after.forks).toEqual([]);
    expect(llm.chatRequests.length).toBe(sent + 3);
    // counted at the tool: only the parent's two calls ever ran
    expect(calls).toEqual(['probe_first:one', 'probe_second:two']);
    const forks = await a.app.get(DataSource).query(`SELECT count(*)::int AS n FROM runs WHERE parent_request_id IS NOT NULL AND conversation_id = $1`, [conversationId]);
    expect(forks[0].n).toBe(0);
  });

  it('a run paused at its latest checkpoint still resumes in place; its older checkpoint is refused by resume and forked by the fork route, leaving it paused', async () => {
    llm.enqueue(call('probe_first', 'one', 'c1'), call('probe_second', 'two', 'c2'));
    const pauseAt = (url: string, body: unknown) =>
      sse(url, { body, onEvent: (e) => (e.event === 'start' ? void post(`${a.url}/api/chat/runs/${e.data.requestId}/pause`, {}) : undefined) });
    const first = await pauseAt(`${a.url}/api/chat/messages_two_stage`, { content: 'look' });
    const requestId = first.events[0].data.requestId as string;
    const second = await pauseAt(`${a.url}/api/chat/messages_two_stage/resume`, { requestId, resumeFromPhaseIndex: 2 });
    expect(second.events.at(-1)).toMatchObject({ event: 'paused', data: { resumeFromPhaseIndex: 4 } });

    // issue 29: resume never forks; the refusal names the fork route
    const sent = llm.chatRequests.length;
    const refused = await post(`${b.url}/api/chat/messages_two_stage/resume`, { requestId, resumeFromPhaseIndex: 2 });
    expect(refused.status).toBe(409);
    const refusal = await refused.json();
    expect(refusal).toMatchObject({ error: 'run_not_resumable', checkpoints: [2, 4] });
    expect(refusal.message).toContain(`POST /api/chat/runs/${requestId}/fork`);
    expect(llm.chatRequests.length).toBe(sent);

    llm.enqueue(respond.turn([{ text: 'Forked.' }]));
    const fork = await sse(forkUrl(b, requestId), { body: { fromPhaseIndex: 2 } });
    expect(fork.events[0].data).toMatchObject({ parentRequestId: requestId, resumeFromPhaseIndex: 2 });
    expect(fork.events.at(-1)!.data.stopReason).toBe('final_answer');
    expect(await (await fetch(`${b.url}/api/chat/runs/${requestId}`)).json()).toMatchObject({ status: 'paused', checkpoints: [2, 4] });

    llm.enqueue(respond.turn([{ text: 'Done.' }]));
    const last = await sse(`${b.url}/api/chat/messages_two_stage/resume`, { body: { requestId, resumeFromPhaseIndex: 4 } });
    expect(last.events[0].data).toMatchObject({ requestId, resumed: true, resumeFromPhaseIndex: 4 });
    expect(last.events[0].data.parentRequestId).toBeUndefined();
    expect(Number(last.events[0].id)).toBe(Number(second.events.at(-1)!.id) + 1);
    expect(last.events.at(-1)!.data.stopReason).toBe('final_answer');
    expect(calls).toEqual(['probe_first:one', 'probe_second:two']);
  });
});
