import { once } from 'node:events';
import type { Client } from 'pg';
import { readSse, startModel, type Instance, type Received } from '../faults/harness';
import type { TestApp } from '../support/app';
import { createTestDatabase, describeOnPostgres } from '../support/db';
import { modelEnv } from '../support/openai-frames';
import { readSseFrames } from '../support/sse-reader';
import { buildService, killA, reviveA, startTwoInstances, stopTwoInstances } from '../support/two-instances';
import { waitFor } from '../support/wait-for';

/**
 * Issue 44 on the unified route (`POST /api/chat/messages`): a run waiting for a person survives
 * its instance, as a two-stage one does (approval-takeover.e2e-spec.ts). A is the built service
 * in a child process (killed with SIGKILL, or stopped with SIGTERM), B an app in this process, on
 * one PostgreSQL. The model's step holds a read-only list_files, which runs at once, and a
 * fetch_page that waits for a person (counted at the page the scripted server serves). Whether
 * A dies or drains while the step waits, the run stays `awaiting_approval` with its approval
 * pending; the decision given on B continues it there: list_files is not run again, fetch_page
 * runs once if approved, one `done`, one answer, and a client reconnecting to B with
 * `Last-Event-ID` reads the rest of one gap-free sequence. A drained while a call of the step
 * still runs hands the run over at the checkpoint the step stores as it asks: B asks the person.
 */
/** short, so a dead A's run is taken over within seconds; long enough that a live A on a loaded machine keeps its lease */
const LEASE_MS = 3000;

describeOnPostgres('two instances and a SIGKILL need PostgreSQL', 'unified approvals across instances: takeover and drain', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let model: Awaited<ReturnType<typeof startModel>>;
  let pg: Client;
  let a: Instance;
  let b: TestApp;
  let env: Record<string, string>;
  let pages = 0;
  /** the drain-mid-step case: fetch_page (slow, needs no person there) and list_files (waits) */
  let midStep = false;

  beforeAll(async () => {
    buildService();
    db = await createTestDatabase();
    // one step of two calls (the model asks only while no tool result is in the conversation), then the answer
    model = await startModel(
      () => ({
        words: ['The', 'page', 'is', 'slow.'],
        calls: midStep
          ? [['fetch_page', JSON.stringify({ url: `http://127.0.0.1:${model.port}/page` })], ['list_files', '{"path":"."}']]
          : [['list_files', '{"path":"."}'], ['fetch_page', JSON.stringify({ url: `http://127.0.0.1:${model.port}/page` })]],
        delayMs: 0,
        pageDelayMs: midStep ? 2000 : 0,
      }),
      (h) => {
        if (h === 'page') pages++;
      },
    );
    env = {
      DATABASE_URL: db.url,
      ...modelEnv(model.port),
      TOOLS_REQUIRE_APPROVAL: 'fetch_page',
      RUN_LEASE_MS: String(LEASE_MS),
      // a turn still running as A drains is handed over at its next checkpoint at once
      SHUTDOWN_GRACE_MS: '0',
      MCP_CONFIG: '',
    };
    ({ a, b, pg } = await startTwoInstances(env, db.url));
  }, 700_000);

  afterAll(async () => {
    await stopTwoInstances({ a, b, pg });
    model?.close();
    await db?.drop();
  });

  beforeEach(async () => {
    pages = 0;
    midStep = false;
    // the previous case stopped A: a new A on the same port
    a = await reviveA(a, env);
  }, 120_000);

  /** A unified turn on A, once its approval was asked: what A's client received up to then (`events`). */
  async function askOnA() {
    const events: Received[] = [];
    const stream = readSse(`${a.url}/api/chat/messages`, { content: 'List the files and fetch the page' }, (e) => events.push(e));
    const ask = await waitFor(() => events.find((e) => e.event === 'approval_required'), { what: `approval_required on A (got ${events.map((e) => e.event).join(',') || 'no event'})`, timeoutMs: 30_000 });
    // what the client holds as A goes: nothing follows the ask until a decision
    return { requestId: String(ask.data.requestId), approvalId: String(ask.data.approvalId), events: events.slice(0, events.indexOf(ask) + 1), stream };
  }

  const decideOnB = (requestId: string, approvalId: string, decision: 'approve' | 'deny' = 'approve') =>
    fetch(`${b.url}/api/chat/runs/${requestId}/approvals/${approvalId}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ decision }) });

  /** SIGTERM: A drains (main.ts), then closes; it is gone once this resolves. */
  async function drainA(): Promise<void> {
    a.child.kill('SIGTERM');
    if (a.child.exitCode === null && a.child.signalCode === null) await once(a.child, 'exit');
  }

  const statusOf = async (requestId: string) => (await pg.query<{ status: string }>('SELECT status FROM runs WHERE request_id = $1', [requestId])).rows[0].status;
  const approvalsOf = async (requestId: string) => (await pg.query<{ status: string }>('SELECT status FROM approvals WHERE request_id = $1', [requestId])).rows.map((r) => r.status);

  async function stored(requestId: string) {
    const events = (await pg.query<{ seq: number; type: string; data: Record<string, unknown> }>('SELECT seq, type, data FROM run_event_list WHERE request_id = $1 ORDER BY seq', [requestId])).rows;
    const answers = (await pg.query<{ content: string }>(`SELECT content FROM chat_messages WHERE request_id = $1 AND role = 'assistant'`, [requestId])).rows;
    return { events, answers };
  }

  /** B's sweeper took the run over: its continued leg's `start` is stored, and the run still waits. */
  async function takenOverWaiting(requestId: string) {
    await waitFor(async () => (await stored(requestId)).events.some((e) => e.type === 'start' && e.data.takeover === true), { what: 'the takeover on B', timeoutMs: LEASE_MS * 10 });
    expect(await statusOf(requestId)).toBe('awaiting_approval');
    expect(await approvalsOf(requestId)).toEqual(['pending']);
    expect(pages).toBe(0);
  }

  /** A client that had read up to `lastSeq` on A reconnects to B: the rest of the run, until its end. */
  async function reconnectToB(requestId: string, lastSeq: number): Promise<Array<{ seq: number; event: string; data: Record<string, unknown> }>> {
    const res = await fetch(`${b.url}/api/chat/runs/${requestId}/events`, { headers: { 'last-event-id': String(lastSeq) } });
    const frames = await readSseFrames(res.body as unknown as AsyncIterable<Uint8Array>);
    return frames.filter((f) => f.event !== 'message').map((f) => ({ seq: Number(f.id), event: f.event, data: JSON.parse(f.data) as Record<string, unknown> }));
  }

  /** What a user sees of a run continued on B after its approval: one end, one answer, each call run once, one sequence. */
  async function expectContinuedOnce(requestId: string, fromA: Received[], rest: Array<{ seq: number; event: string }>, decision: 'approved' | 'denied' = 'approved') {
    const { events, answers } = await stored(requestId);
    expect(pages).toBe(decision === 'approved' ? 1 : 0);
    expect(events.filter((e) => e.type === 'done')).toHaveLength(1);
    expect(events.at(-1)).toMatchObject({ type: 'done', data: { stopReason: 'final_answer' } });
    expect(events.every((e, i) => e.seq === i + 1)).toBe(true);
    // list_files ran on A before the step asked; B did not run it again
    expect(events.filter((e) => e.type === 'tool_progress' && e.data.tool === 'list_files' && e.data.action === 'calling')).toHaveLength(1);
    expect(events.filter((e) => e.type === 'approval_required')).toHaveLength(1);
    expect(events.filter((e) => e.type === 'approval_decided')).toHaveLength(1);
    expect(answers).toHaveLength(1);
    expect(answers[0].content).toBe(String(events.at(-1)!.data.fullContent));
    expect(await statusOf(requestId)).toBe('completed');
    expect(await approvalsOf(requestId)).toEqual([decision]);
    // the reconnected client: what A sent, then B's events from the next seq, one `done`
    const seqs = [...fromA.map((e) => e.id), ...rest.map((e) => e.seq)];
    expect(seqs).toEqual(seqs.map((_, i) => i + 1));
    expect([...fromA.map((e) => e.event), ...rest.map((e) => e.event)].filter((e) => e === 'done')).toHaveLength(1);
  }

  it('A killed while the step waits, approved on B after the takeover: it goes on from the step, fetch_page runs once', async () => {
    const turn = await askOnA();
    expect(pages).toBe(0);
    await killA(a);
    await takenOverWaiting(turn.requestId);
    const lastSeq = turn.events.at(-1)!.id;
    const following = reconnectToB(turn.requestId, lastSeq);
    expect((await decideOnB(turn.requestId, turn.approvalId)).status).toBe(200);
    await expectContinuedOnce(turn.requestId, turn.events, await following);
  }, 90_000);

  it('A killed while the step waits, approved on B before the takeover: the takeover finds the decision and runs fetch_page once', async () => {
    const turn = await askOnA();
    await killA(a);
    expect((await decideOnB(turn.requestId, turn.approvalId)).status).toBe(200);
    await expectContinuedOnce(turn.requestId, turn.events, await reconnectToB(turn.requestId, turn.events.at(-1)!.id));
  }, 90_000);

  it('A drained by SIGTERM while the step waits: the run is handed over still waiting (not cancelled), approved on B it runs fetch_page once', async () => {
    const turn = await askOnA();
    await drainA();
    // A stored no end as it left: the run waits on, taken over by B
    expect((await stored(turn.requestId)).events.filter((e) => e.type === 'done')).toHaveLength(0);
    await takenOverWaiting(turn.requestId);
    const following = reconnectToB(turn.requestId, turn.events.at(-1)!.id);
    expect((await decideOnB(turn.requestId, turn.approvalId)).status).toBe(200);
    await expectContinuedOnce(turn.requestId, turn.events, await following);
  }, 90_000);

  it('A killed while the step waits, denied on B: the model reads the refusal, fetch_page never runs', async () => {
    const turn = await askOnA();
    await killA(a);
    await takenOverWaiting(turn.requestId);
    const following = reconnectToB(turn.requestId, turn.events.at(-1)!.id);
    expect((await decideOnB(turn.requestId, turn.approvalId, 'deny')).status).toBe(200);
    await expectContinuedOnce(turn.requestId, turn.events, await following, 'denied');
  }, 90_000);

  it('A drained by SIGTERM while a call of the step still runs: handed over as the step asks, B waits for the approval and runs neither call again', async () => {
    // a project where list_files waits for a person and fetch_page (slow here) does not
    const project = 'drain-mid-step';
    const put = await fetch(`${b.url}/api/admin/projects/${project}/tool-approvals`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ require: ['list_files'], exempt: ['fetch_page'] }) });
    expect(put.status).toBe(200);
    midStep = true;
    const events: Received[] = [];
    void readSse(`${a.url}/api/chat/messages`, { content: 'Fetch the page and list the files', projectId: project }, (e) => events.push(e));
    await waitFor(() => pages === 1, { what: 'fetch_page to run on A', timeoutMs: 30_000 });
    const requestId = String(events.find((e) => e.event === 'start')!.data.requestId);
    await drainA();
    // A stopped at the checkpoint the step stored as it asked, before the approval was stored: B asks it
    await waitFor(async () => (await stored(requestId)).events.some((e) => e.type === 'start' && e.data.takeover === true), { what: 'the takeover on B', timeoutMs: LEASE_MS * 10 });
    const ask = await waitFor(async () => (await stored(requestId)).events.find((e) => e.type === 'approval_required'), { what: 'the approval asked on B' });
    expect(ask.data.tool).toBe('list_files');
    expect(await statusOf(requestId)).toBe('awaiting_approval');
    const following = reconnectToB(requestId, 0);
    expect((await decideOnB(requestId, String(ask.data.approvalId))).status).toBe(200);
    const followed = await following;
    const { events: all, answers } = await stored(requestId);
    // fetch_page ran once, on A; list_files once, on B after the approval
    expect(pages).toBe(1);
    expect(all.filter((e) => e.type === 'tool_progress' && e.data.action === 'calling').map((e) => e.data.tool)).toEqual(['fetch_page', 'list_files']);
    expect(all.filter((e) => e.type === 'tool_progress' && e.data.tool === 'list_files' && e.data.action !== 'calling')).toHaveLength(1);
    expect(all.filter((e) => e.type === 'done')).toHaveLength(1);
    expect(all.at(-1)).toMatchObject({ type: 'done', data: { stopReason: 'final_answer' } });
    expect(all.every((e, i) => e.seq === i + 1)).toBe(true);
    expect(followed.map((e) => e.seq)).toEqual(all.map((e) => e.seq));
    expect(answers).toHaveLength(1);
    expect(await statusOf(requestId)).toBe('completed');
  }, 90_000);
});
