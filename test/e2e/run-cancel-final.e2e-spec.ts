import { DataSource } from 'typeorm';
import type { ToolDefinition } from '../../src/tools/tool-definition';
import { ToolRegistryService } from '../../src/tools/tool-registry.service';
import { startApp, startPeer, type TestApp } from '../support/app';
import { onPostgres } from '../support/db';
import { ReplayServer, respond } from '../support/replay-server';
import { sse } from '../support/sse-client';
import { probeTool } from '../support/test-tools';
import { waitFor } from '../support/wait-for';
import { RunControlService } from '../../src/runs/run-control.service';

const post = (url: string, body: unknown) => fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
function latch(): { opened: Promise<void>; open: () => void } {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open };
}
const call = (name: string, step: string, id: string) => respond.turn([{ toolCall: { name, args: { step }, id } }]);

/**
 * Issue 29: a user who pressed Stop can rely on it. Resuming a cancelled run is
 * `409 run_cancelled` and changes nothing, whichever instance is asked and however the run was
 * cancelled (while it streamed, or while it was paused); continuing from one of its checkpoints
 * is a deliberate fork on the fork route. Instance A runs the turn, B is asked (on PostgreSQL two
 * instances share the database; PGlite in memory cannot be shared, so there A and B are one).
 */
describe(`a cancelled run is never resumed (${onPostgres() ? 'two instances' : 'one instance'})`, () => {
  let llm: ReplayServer;
  let a: TestApp;
  let b: TestApp;
  const calls: string[] = [];

  beforeAll(async () => {
    llm = await ReplayServer.start();
    // a long lease: no renewal reads a stored control flag during a test (the pause race below
    // stores one that the executing instance must not hear of before it pauses)
    const env = { LLM_PROVIDER: 'openai', LLM_BASE_URL: llm.openAiBaseUrl, LLM_MODEL: 'scripted-model', TWO_STAGE_ENABLED: 'true', RUN_LEASE_MS: '120000' };
    a = await startApp(env);
    b = onPostgres() ? await startPeer(a, env) : a;
    for (const t of new Set([a, b])) {
      const registry = t.app.get(ToolRegistryService);
      registry.register(probeTool('probe_first', calls));
      registry.register(probeTool('probe_second', calls));
      registry.register(gatedTool);
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

  /** A tool that runs until the test opens its gate (opened before the tool starts, it does not wait). */
  let gate = latch();
  const openGate = () => gate.open();
  beforeEach(() => (gate = latch()));
  const gatedTool: ToolDefinition = {
    name: 'probe_gate',
    description: 'Waits for something',
    parameters: { type: 'object', properties: { step: { type: 'string' } }, required: ['step'] },
    origin: 'builtin',
    isAvailable: () => true,
    execute: async (args: Record<string, unknown>) => {
      calls.push(`probe_gate:${String(args.step)}`);
      await gate.opened;
      return { output: { found: 'gate result' } };
    },
  };

  /** Everything a client can read about a run and its conversation, as bytes. */
  const snapshot = async (requestId: string, conversationId: string) => ({
    run: await (await fetch(`${a.url}/api/chat/runs/${requestId}`)).text(),
    events: await (await fetch(`${a.url}/api/chat/runs/${requestId}/events`)).text(),
    messages: await (await fetch(`${a.url}/api/chat/conversations/${conversationId}/messages`)).text(),
  });

  /**
   * Resume from every instance and every checkpoint: each answer is 409 run_cancelled naming the
   * fork route, and nothing changes (no model request, no tool run, the run, its events and its
   * messages byte-equal). Returns what a client read before.
   */
  const expectRefusedEverywhere = async (requestId: string, conversationId: string, checkpoints: number[]) => {
    const before = await snapshot(requestId, conversationId);
    const sent = llm.chatRequests.length;
    const ran = [...calls];
    for (const t of new Set([a, b])) {
      for (const resumeFromPhaseIndex of checkpoints) {
        const res = await post(`${t.url}/api/chat/messages_two_stage/resume`, { requestId, resumeFromPhaseIndex });
        expect(res.status).toBe(409);
        const body = await res.json();
        expect(body).toMatchObject({ statusCode: 409, error: 'run_cancelled', checkpoints });
        expect(body.message).toContain(`POST /api/chat/runs/${requestId}/fork`);
      }
    }
    expect(llm.chatRequests.length).toBe(sent);
    expect(calls).toEqual(ran);
    expect(await snapshot(requestId, conversationId)).toEqual(before);
    return before;
  };

  it('a run cancelled while streaming after a checkpoint: resume is 409 run_cancelled on every instance; the fork route forks it', async () => {
    // a tool phase (checkpoint 2), then a model call that stalls after its first text until it is cancelled
    llm.enqueue(
      respond.turn([{ text: 'Looking it up. ' }, { toolCall: { name: 'probe_first', args: { step: 'one' }, id: 'c1' } }]),
      respond.turn([{ text: 'Almost ' }, { text: 'there.' }], { faults: { stallAfter: 2 } }),
    );
    let cancel: Promise<Response> | undefined;
    const parent = await sse(`${a.url}/api/chat/messages_two_stage`, {
      body: { content: 'Find it' },
      onEvent: (e) => {
        if (e.event === 'chunk' && Number(e.data.phaseIndex) > 2 && !cancel) cancel = post(`${b.url}/api/chat/runs/${e.data.requestId}/cancel`, {});
      },
    });
    expect((await cancel!).status).toBe(202);
    expect(parent.events.at(-1)).toMatchObject({ event: 'done', data: { stopReason: 'cancelled' } });
    const requestId = parent.events[0].data.requestId as string;
    const conversationId = parent.events[0].data.conversationId as string;
    expect(await (await fetch(`${b.url}/api/chat/runs/${requestId}`)).json()).toMatchObject({ status: 'cancelled', checkpoints: [2] });
    expect(calls).toEqual(['probe_first:one']);

    // nothing changed: no model request, no tool run, no new run, the run and its answer as they were
    await expectRefusedEverywhere(requestId, conversationId, [2]);
    expect(calls).toEqual(['probe_first:one']);
    const runs = await a.app.get(DataSource).query(`SELECT count(*)::int AS n FROM runs WHERE conversation_id = $1`, [conversationId]);
    expect(runs[0].n).toBe(1);

    // forking is the deliberate way on: a new run from checkpoint 2, the phase-2 tool not run again
    calls.length = 0;
    llm.enqueue(call('probe_first', 'one', 'f1'), call('probe_second', 'two', 'f2'), respond.turn([{ text: 'Found it.' }]));
    const fork = await sse(`${b.url}/api/chat/runs/${requestId}/fork`, { body: { fromPhaseIndex: 2 } });
    expect(fork.status).toBe(200);
    const forkId = fork.events[0].data.requestId as string;
    expect(forkId).not.toBe(requestId);
    expect(fork.events[0]).toMatchObject({ event: 'start', id: '1', data: { resumed: true, resumeFromPhaseIndex: 2, parentRequestId: requestId, conversationId } });
    expect(fork.events.at(-1)).toMatchObject({ event: 'done', data: { stopReason: 'final_answer' } });
    expect(fork.events.at(-1)!.data.fullContent).toMatch(/^Looking it up\. .*Found it\.$/s);
    // counted at the tool: the call made before the checkpoint was refused as a duplicate, the new one ran
    expect(calls).toEqual(['probe_second:two']);
    // the cancelled parent stays cancelled, and is still not resumable
    expect(await (await fetch(`${a.url}/api/chat/runs/${requestId}`)).json()).toMatchObject({ status: 'cancelled', forks: [{ requestId: forkId, fromPhaseIndex: 2 }] });
    await expectRefusedEverywhere(requestId, conversationId, [2]);
  });

  it('a cancel stored while the run was pausing is carried out: the run ends cancelled, not paused and resumable', async () => {
    llm.enqueue(call('probe_gate', 'one', 'c1'), respond.turn([{ text: 'Never sent.' }]));
    const db = a.app.get(DataSource);
    let resumedEarly: unknown[] = [];
    const paused = await sse(`${a.url}/api/chat/messages_two_stage`, {
      body: { content: 'wait for it' },
      onEvent: (e) => {
        if (e.event !== 'tool_progress' || e.data.action !== 'calling') return;
        void (async () => {
          const requestId = e.data.requestId as string;
          // the pause is asked for; then a cancel is stored as another instance's cancel call
          // stores it (its notification has not reached this instance yet); then the tool ends
          // and the run reaches its pause point
          expect((await post(`${a.url}/api/chat/runs/${requestId}/pause`, {})).status).toBe(202);
          await db.query(`UPDATE runs SET control = 'cancel' WHERE request_id = $1 AND status = 'running'`, [requestId]);
          // still running, but its cancel was accepted: a resume is told so, not to pause it first
          const early = await post(`${b.url}/api/chat/messages_two_stage/resume`, { requestId, resumeFromPhaseIndex: 2 });
          resumedEarly = [early.status, (await early.json()).error];
          openGate();
        })();
      },
    });
    expect(resumedEarly).toEqual([409, 'run_cancelled']);
    // the stream ended at the pause it had already sent; the run did not stay paused
    expect(paused.events.at(-1)).toMatchObject({ event: 'paused', data: { resumeFromPhaseIndex: 2 } });
    const requestId = paused.events[0].data.requestId as string;
    const conversationId = paused.events[0].data.conversationId as string;
    expect(await (await fetch(`${b.url}/api/chat/runs/${requestId}`)).json()).toMatchObject({ status: 'cancelled', stopReason: 'cancelled', control: null, checkpoints: [2] });
    const stored = await sse(`${b.url}/api/chat/runs/${requestId}/events`, { method: 'GET' });
    expect(stored.events.map((e) => e.event).slice(-2)).toEqual(['paused', 'done']);
    expect(stored.events.at(-1)).toMatchObject({ data: { stopReason: 'cancelled' } });

    await expectRefusedEverywhere(requestId, conversationId, [2]);
    expect(calls).toEqual(['probe_gate:one']);
    const messages = (await (await fetch(`${a.url}/api/chat/conversations/${conversationId}/messages`)).json()) as Array<Record<string, unknown>>;
    expect(messages.filter((m) => m.role === 'assistant')).toEqual([expect.objectContaining({ requestId, status: 'cancelled' })]);
  });

  it('a paused run cancelled before its resume: resume is 409 run_cancelled on every instance', async () => {
    // the tool holds the run until instance A knows of the pause asked on B: the pause point after
    // it must see it, however fast the turn is (a model without delay once raced the NOTIFY)
    llm.enqueue(call('probe_gate', 'one', 'c1'), respond.turn([{ text: 'Never sent.' }]));
    const paused = await sse(`${a.url}/api/chat/messages_two_stage`, {
      body: { content: 'look' },
      onEvent: (e) => {
        if (e.event !== 'start') return;
        const id = e.data.requestId as string;
        void post(`${b.url}/api/chat/runs/${id}/pause`, {})
          .then(() => waitFor(() => a.app.get(RunControlService).pauseRequested(id), { timeoutMs: 10_000 }))
          .then(() => openGate());
      },
    });
    expect(paused.events.at(-1)).toMatchObject({ event: 'paused', data: { resumeFromPhaseIndex: 2 } });
    const requestId = paused.events[0].data.requestId as string;
    const conversationId = paused.events[0].data.conversationId as string;

    expect((await post(`${b.url}/api/chat/runs/${requestId}/cancel`, {})).status).toBe(202);
    expect(await (await fetch(`${a.url}/api/chat/runs/${requestId}`)).json()).toMatchObject({ status: 'cancelled', checkpoints: [2] });

    const before = await expectRefusedEverywhere(requestId, conversationId, [2]);
    expect(calls).toEqual(['probe_gate:one']);
    // the answer stays the cancelled one
    const messages = JSON.parse(before.messages) as Array<Record<string, unknown>>;
    expect(messages.filter((m) => m.role === 'assistant')).toEqual([expect.objectContaining({ requestId, status: 'cancelled' })]);
  });
});
