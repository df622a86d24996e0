import { once } from 'node:events';
import type { Client } from 'pg';
import { readSse, startModel, type Instance, type Received } from '../faults/harness';
import type { TestApp } from '../support/app';
import { createTestDatabase, describeOnPostgres } from '../support/db';
import { modelEnv } from '../support/openai-frames';
import { buildService, reviveA, startTwoInstances, stopTwoInstances } from '../support/two-instances';
import { waitFor } from '../support/wait-for';

/**
 * Approvals across two instances on one PostgreSQL (issue 32): A is the built service in a child
 * process (so it can be killed with SIGKILL), B an app in this process. The model asks for
 * fetch_page of a page the scripted server serves, so every execution of the tool is counted at
 * the tool. An approval asked on A and given on B lets A go on; when A dies while it waits, B's
 * sweeper takes the run over and the call runs exactly once, whether the decision came before or
 * after the takeover, and the answer is stored once.
 */
/** short, so a dead A's run is taken over within seconds; long enough that a live A on a loaded machine keeps its lease */
const LEASE_MS = 3000;

describeOnPostgres('two instances and a SIGKILL need PostgreSQL', 'approvals across instances: takeover after instance death', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let model: Awaited<ReturnType<typeof startModel>>;
  let pg: Client;
  let a: Instance;
  let b: TestApp;
  let env: Record<string, string>;
  let pages = 0;
  /** the model asks for the call until the approval is asked, then answers (a declined call is not asked for again) */
  let asked = false;

  beforeAll(async () => {
    buildService();
    db = await createTestDatabase();
    model = await startModel(
      () => ({ words: ['The', 'page', 'is', 'slow.'], calls: asked ? [] : [['fetch_page', JSON.stringify({ url: `http://127.0.0.1:${model.port}/page` })]], delayMs: 0 }),
      (h) => {
        if (h === 'page') pages++;
      },
    );
    env = {
      DATABASE_URL: db.url,
      ...modelEnv(model.port),
      TWO_STAGE_ENABLED: 'true',
      TOOLS_REQUIRE_APPROVAL: 'fetch_page',
      RUN_LEASE_MS: String(LEASE_MS),
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
    asked = false;
    // the previous case killed A: a new A on the same port
    a = await reviveA(a, env);
  }, 120_000);

  /** A turn on A: resolves with its requestId and approvalId once approval_required arrived; `stream` is A's response. */
  async function askOnA() {
    const events: Received[] = [];
    const stream = readSse(`${a.url}/api/chat/messages_two_stage`, { content: 'Fetch the page' }, (e) => events.push(e));
    let status = 0;
    void stream.then((r) => (status = r.status));
    const ask = await waitFor(() => events.find((e) => e.event === 'approval_required'), { what: `approval_required on A (got ${events.map((e) => e.event).join(',') || 'no event'}; status ${status})`, timeoutMs: 30_000 }).catch(async (err: Error) => {
      throw new Error(`${err.message}; A answered ${status || 'nothing yet'} with ${events.map((e) => `${e.event} ${JSON.stringify(e.data).slice(0, 200)}`).join(' | ')}`);
    });
    asked = true;
    return { requestId: String(ask.data.requestId), approvalId: String(ask.data.approvalId), stream, events };
  }

  const decideOnB = (requestId: string, approvalId: string, decision: 'approve' | 'deny' = 'approve') =>
    fetch(`${b.url}/api/chat/runs/${requestId}/approvals/${approvalId}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ decision }) });

  async function killA(): Promise<void> {
    a.child.kill('SIGKILL');
    if (a.child.exitCode === null && a.child.signalCode === null) await once(a.child, 'exit');
  }

  /** The run's stored events, and how many assistant messages it has. */
  async function stored(requestId: string) {
    const events = (await pg.query<{ seq: number; type: string; data: Record<string, unknown> }>('SELECT seq, type, data FROM run_event_list WHERE request_id = $1 ORDER BY seq', [requestId])).rows;
    const answers = Number((await pg.query<{ n: string }>(`SELECT count(*) AS n FROM chat_messages WHERE request_id = $1 AND role = 'assistant'`, [requestId])).rows[0].n);
    return { events, answers };
  }

  /** Follows the run from B through the reconnect route until its end. */
  const followOnB = (requestId: string) => readSse(`${b.url}/api/chat/runs/${requestId}/events`, undefined, () => undefined, 'GET');

  /** The invariants of a run that was approved once: the tool ran once, one done, one answer, one approval_decided. */
  async function expectRanOnce(requestId: string, followed: Received[]) {
    const { events, answers } = await stored(requestId);
    expect(pages).toBe(1);
    expect(events.filter((e) => e.type === 'done')).toHaveLength(1);
    expect(events.at(-1)).toMatchObject({ type: 'done', data: { stopReason: 'final_answer' } });
    expect(events.filter((e) => e.type === 'approval_required')).toHaveLength(1);
    expect(events.filter((e) => e.type === 'approval_decided')).toHaveLength(1);
    expect(events.every((e, i) => e.seq === i + 1)).toBe(true);
    expect(answers).toBe(1);
    expect(followed.filter((e) => e.event === 'done')).toHaveLength(1);
    expect((await pg.query('SELECT status FROM runs WHERE request_id = $1', [requestId])).rows[0].status).toBe('completed');
    expect((await pg.query('SELECT status FROM approvals WHERE request_id = $1', [requestId])).rows.map((r) => r.status)).toEqual(['approved']);
  }

  it('an approval asked on A and given on B: A goes on and runs the call once', async () => {
    const turn = await askOnA();
    expect(pages).toBe(0);
    expect((await decideOnB(turn.requestId, turn.approvalId)).status).toBe(200);
    const res = await turn.stream;
    expect(res.events.at(-1)).toMatchObject({ event: 'done', data: { stopReason: 'final_answer' } });
    expect(res.events.some((e) => e.event === 'start' && e.data.takeover)).toBe(false);
    await expectRanOnce(turn.requestId, res.events);
  }, 60_000);

  it('A killed while it waits, the decision given on B before the takeover: B takes the run over and runs the call once', async () => {
    const turn = await askOnA();
    await killA();
    // the decision lands while nobody holds the run: it is stored, and the takeover finds it
    expect((await decideOnB(turn.requestId, turn.approvalId)).status).toBe(200);
    const followed = await followOnB(turn.requestId);
    const { events } = await stored(turn.requestId);
    expect(events.find((e) => e.type === 'start' && e.data.takeover === true)).toMatchObject({ data: { resumed: true, takeover: true } });
    await expectRanOnce(turn.requestId, followed.events);
  }, 60_000);

  it('A killed while it waits, the decision given on B after the takeover: the taken-over run hears it and runs the call once', async () => {
    const turn = await askOnA();
    await killA();
    // B's sweeper took the run over: its `start` of the continued leg is stored, still waiting
    await waitFor(async () => (await stored(turn.requestId)).events.some((e) => e.type === 'start' && e.data.takeover === true), { what: 'the takeover on B', timeoutMs: LEASE_MS * 10 });
    expect((await pg.query('SELECT status FROM runs WHERE request_id = $1', [turn.requestId])).rows[0].status).toBe('awaiting_approval');
    expect(pages).toBe(0);
    const following = followOnB(turn.requestId);
    expect((await decideOnB(turn.requestId, turn.approvalId)).status).toBe(200);
    const followed = await following;
    await expectRanOnce(turn.requestId, followed.events);
  }, 60_000);

  it('A shut down gracefully (SIGTERM) while it waits: its approval stays pending, B takes the run over and runs the call once', async () => {
    const turn = await askOnA();
    a.child.kill('SIGTERM');
    await once(a.child, 'exit');
    await waitFor(async () => (await stored(turn.requestId)).events.some((e) => e.type === 'start' && e.data.takeover === true), { what: 'the takeover on B', timeoutMs: LEASE_MS * 10 });
    expect((await pg.query('SELECT status FROM approvals WHERE request_id = $1', [turn.requestId])).rows.map((r) => r.status)).toEqual(['pending']);
    const following = followOnB(turn.requestId);
    expect((await decideOnB(turn.requestId, turn.approvalId)).status).toBe(200);
    await expectRanOnce(turn.requestId, (await following).events);
    // A stored nothing as it stopped: no cancelled end before B's
    expect((await stored(turn.requestId)).events.filter((e) => e.type === 'done')).toHaveLength(1);
  }, 60_000);

  it('A killed while it waits, the run cancelled on B and then approved: the takeover ends it cancelled, the tool never runs', async () => {
    const turn = await askOnA();
    await killA();
    expect((await fetch(`${b.url}/api/chat/runs/${turn.requestId}/cancel`, { method: 'POST' })).status).toBe(202);
    // the run waits still (nobody held it to stop it): a decision is accepted, the cancel wins
    await decideOnB(turn.requestId, turn.approvalId);
    const followed = await followOnB(turn.requestId);
    expect(followed.events.filter((e) => e.event === 'done')).toHaveLength(1);
    expect(followed.events.at(-1)).toMatchObject({ event: 'done', data: { stopReason: 'cancelled' } });
    expect(pages).toBe(0);
    expect((await pg.query('SELECT status FROM runs WHERE request_id = $1', [turn.requestId])).rows[0].status).toBe('cancelled');
  }, 60_000);

  it('A killed while it waits, the approval denied on B: the model reads the refusal, the tool never runs', async () => {
    const turn = await askOnA();
    await killA();
    expect((await decideOnB(turn.requestId, turn.approvalId, 'deny')).status).toBe(200);
    const followed = await followOnB(turn.requestId);
    expect(followed.events.filter((e) => e.event === 'done')).toHaveLength(1);
    expect(followed.events.at(-1)).toMatchObject({ event: 'done', data: { stopReason: 'final_answer' } });
    expect(pages).toBe(0);
    expect((await stored(turn.requestId)).answers).toBe(1);
  }, 60_000);
});
