import { DataSource } from 'typeorm';
import { RunSweeperService } from '../../src/runs/run-sweeper.service';
import { approvalEnv, describeProjectBoundApprovals, seedWorkspace } from '../support/approval-cases';
import { startApp, type TestApp } from '../support/app';
import { ReplayServer, respond } from '../support/replay-server';
import { checkEnvelope, sse, type SseEvent, type SseResponse } from '../support/sse-client';
import { waitFor } from '../support/wait-for';

/**
 * Approvals (issue 32) on the two-stage route: a call that needs a person does not run until
 * approved; approve runs it once (with edited arguments when given), deny reaches the model as a
 * declined result, a timeout denies, cancel and pause while waiting, a client that leaves while
 * waiting, another project's key. Runs on PGlite, and on PostgreSQL with DATABASE_URL.
 */
/** the two-stage route's environment */
const env = (llm: ReplayServer, extra: Record<string, string> = {}) => approvalEnv(llm, { TWO_STAGE_ENABLED: 'true', ...extra });

type Headers = Record<string, string>;

/** A two-stage turn whose model reads docs/roadmap.md, then answers: the stream, and its approval_required once sent. */
function startTurn(t: TestApp, body: Record<string, unknown>, headers: Headers = {}, close = false) {
  const events: SseEvent[] = [];
  const stream = sse(`${t.url}/api/chat/messages_two_stage`, {
    body: { content: 'Summarize the roadmap', ...body },
    headers,
    onEvent: (e) => {
      events.push(e);
      if (close && e.event === 'approval_required') return 'close';
    },
  });
  const asked = waitFor(() => events.find((e) => e.event === 'approval_required'), { what: 'approval_required' });
  return { stream, asked, events };
}

describe('approvals on the two-stage route', () => {
  let llm: ReplayServer;
  let t: TestApp;
  const post = (path: string, body: unknown, headers: Headers = {}) =>
    fetch(`${t.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  const getJson = async (path: string) => (await fetch(`${t.url}${path}`)).json();
  const decide = (requestId: string, approvalId: string, body: unknown) => post(`/api/chat/runs/${requestId}/approvals/${approvalId}`, body);
  const toolResults = async (requestId: string) =>
    ((await getJson(`/api/trace?requestId=${requestId}&type=tool_result`)) as Array<{ details: { outcome: string } }>).map((r) => r.details.outcome);
  const modelSaw = (i: number) => JSON.stringify(llm.chatRequests[i].body.messages);
  const scriptRead = (args: Record<string, unknown> = { path: 'docs/roadmap.md' }) =>
    llm.enqueue(respond.turn([{ text: 'Let me read it. ' }, { toolCall: { name: 'read_file', args } }]), respond.turn([{ text: 'Here is my answer.' }]));

  beforeAll(async () => {
    llm = await ReplayServer.start();
    t = await startApp(env(llm));
    seedWorkspace(t);
  }, 120_000);
  afterAll(async () => {
    await t.close();
    await llm.close();
  });
  beforeEach(() => llm.reset());

  it('waits for a person before the call runs; approve runs it exactly once; a second decision is 409', async () => {
    scriptRead();
    const turn = startTurn(t, {});
    const asked = await turn.asked;
    const requestId = asked.data.requestId as string;
    expect(asked.data).toMatchObject({ tool: 'read_file', arguments: { path: 'docs/roadmap.md' }, reason: 'configured', expiresAt: expect.any(String) });
    // nothing of the tool ran, the model was not called again, the run says it waits
    expect(await toolResults(requestId)).not.toContain('success');
    expect(llm.chatRequests).toHaveLength(1);
    expect((await getJson(`/api/chat/runs/${requestId}`)).status).toBe('awaiting_approval');
    const listed = await getJson(`/api/chat/runs/${requestId}/approvals`);
    expect(listed).toEqual([expect.objectContaining({ approvalId: asked.data.approvalId, status: 'pending', decision: null, tool: 'read_file' })]);

    const ok = await decide(requestId, asked.data.approvalId as string, { decision: 'approve' });
    expect(ok.status).toBe(200);
    expect(await ok.json()).toMatchObject({ status: 'approved', decision: 'approve', edited: false, by: null });
    const res = await turn.stream;
    checkEnvelope(res.events);
    const decided = res.events.find((e) => e.event === 'approval_decided')!;
    expect(decided.data).toMatchObject({ approvalId: asked.data.approvalId, decision: 'approve', edited: false, by: null });
    expect(res.events.at(-1)!.data).toMatchObject({ stopReason: 'final_answer' });
    expect((await toolResults(requestId)).filter((o) => o === 'success')).toHaveLength(1);
    expect(modelSaw(1)).toContain('Ship it.');
    expect((await getJson(`/api/chat/runs/${requestId}`)).status).toBe('completed');
    const again = await decide(requestId, asked.data.approvalId as string, { decision: 'deny' });
    expect(again.status).toBe(409);
    expect(await again.json()).toMatchObject({ error: 'approval_not_pending', status: 'approved' });
    const trace = (await getJson(`/api/trace?requestId=${requestId}`)) as Array<{ type: string; details: Record<string, unknown> }>;
    expect(trace.find((r) => r.type === 'approval_requested')).toBeDefined();
    expect(trace.find((r) => r.type === 'approval_decided')!.details).toMatchObject({ decision: 'approve', edited: false, keyId: null, waitMs: expect.any(Number) });
  });

  it('deny reaches the model as a declined result and the turn ends with an answer; the tool never runs', async () => {
    scriptRead();
    const turn = startTurn(t, {});
    const asked = await turn.asked;
    const requestId = asked.data.requestId as string;
    expect((await decide(requestId, asked.data.approvalId as string, { decision: 'deny', reason: 'not that file today' })).status).toBe(200);
    const res = await turn.stream;
    expect(res.events.find((e) => e.event === 'approval_decided')!.data).toMatchObject({ decision: 'deny', reason: 'not that file today' });
    expect(res.events.at(-1)!.data).toMatchObject({ stopReason: 'final_answer', fullContent: 'Let me read it. \n\nHere is my answer.' });
    expect(modelSaw(1)).toContain('declined');
    expect(modelSaw(1)).toContain('not that file today');
    expect(modelSaw(1)).not.toContain('Ship it.');
    expect(await toolResults(requestId)).not.toContain('success');
  });

  it('an invalid edit is 400 and changes nothing; a valid edit runs with the edited arguments', async () => {
    scriptRead();
    const turn = startTurn(t, {});
    const asked = await turn.asked;
    const requestId = asked.data.requestId as string;
    const approvalId = asked.data.approvalId as string;
    const bad = await decide(requestId, approvalId, { decision: 'approve', arguments: { path: 5 } });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ error: 'invalid_approval', errors: expect.any(Array) });
    // the tool's own rule: a path that leaves the project folder is refused before the approval is spent
    const outside = await decide(requestId, approvalId, { decision: 'approve', arguments: { path: '../../etc/passwd' } });
    expect(outside.status).toBe(400);
    expect(JSON.stringify(await outside.json())).toContain('outside');
    expect((await decide(requestId, approvalId, { decision: 'deny', arguments: { path: 'docs/other.md' } })).status).toBe(400);
    expect((await decide(requestId, approvalId, { decision: 'maybe' })).status).toBe(400);
    expect((await getJson(`/api/chat/runs/${requestId}/approvals`))[0]).toMatchObject({ status: 'pending' });
    expect((await getJson(`/api/chat/runs/${requestId}`)).status).toBe('awaiting_approval');
    expect(llm.chatRequests).toHaveLength(1);

    const ok = await decide(requestId, approvalId, { decision: 'approve', arguments: { path: 'docs/other.md' } });
    expect(await ok.json()).toMatchObject({ status: 'approved', edited: true, editedArguments: { path: 'docs/other.md', maxBytes: 65536 } });
    const res = await turn.stream;
    expect(res.events.find((e) => e.event === 'approval_decided')!.data).toMatchObject({ decision: 'approve', edited: true });
    expect(modelSaw(1)).toContain('The other file says hello.');
    expect(modelSaw(1)).not.toContain('Ship it.');
    expect(res.events.at(-1)!.data).toMatchObject({ stopReason: 'final_answer' });
  });

  it('an approval that times out is a denial with reason timeout', async () => {
    scriptRead();
    const turn = startTurn(t, { options: { approvalTimeoutMs: 1000 } });
    const asked = await turn.asked;
    const res = await turn.stream;
    expect(res.events.find((e) => e.event === 'approval_decided')!.data).toMatchObject({ decision: 'deny', by: 'timeout', reason: 'timeout' });
    expect(res.events.at(-1)!.data).toMatchObject({ stopReason: 'final_answer' });
    expect(modelSaw(1)).toContain('declined');
    expect((await getJson(`/api/chat/runs/${asked.data.requestId}/approvals`))[0]).toMatchObject({ status: 'expired', decision: 'deny', by: 'timeout' });
    expect((await decide(asked.data.requestId as string, asked.data.approvalId as string, { decision: 'approve' })).status).toBe(409);
    expect((await post('/api/chat/messages_two_stage', { content: 'x', options: { approvalTimeoutMs: 10 } })).status).toBe(400);
  });

  it('cancel while waiting ends the run cancelled; a late decision is 409', async () => {
    scriptRead();
    const turn = startTurn(t, {});
    const asked = await turn.asked;
    const requestId = asked.data.requestId as string;
    expect((await post(`/api/chat/runs/${requestId}/cancel`, {})).status).toBe(202);
    const res = await turn.stream;
    expect(res.events.at(-1)!.data).toMatchObject({ stopReason: 'cancelled' });
    expect((await getJson(`/api/chat/runs/${requestId}`)).status).toBe('cancelled');
    const late = await decide(requestId, asked.data.approvalId as string, { decision: 'approve' });
    expect(late.status).toBe(409);
    expect(await late.json()).toMatchObject({ error: 'approval_not_pending', status: 'void' });
    expect(await toolResults(requestId)).not.toContain('success');
    expect(llm.chatRequests).toHaveLength(1);
  });

  it('a client that disconnects while waiting does not cancel the run: decided later, it runs on and is followed by reconnecting', async () => {
    scriptRead();
    const turn = startTurn(t, {}, {}, true);
    const asked = await turn.asked;
    const requestId = asked.data.requestId as string;
    await turn.stream;
    // the server has seen the client go: no stream is open
    await waitFor(async () => /orion_open_streams(?:\{[^}]*\})? 0\b/.test(await (await fetch(`${t.url}/metrics`)).text()), { what: 'the stream to close' });
    expect((await getJson(`/api/chat/runs/${requestId}`)).status).toBe('awaiting_approval');
    expect((await decide(requestId, asked.data.approvalId as string, { decision: 'approve' })).status).toBe(200);
    await waitFor(async () => (await getJson(`/api/chat/runs/${requestId}`)).status === 'completed', { what: 'the run to complete without a client' });
    const replay: SseResponse = await sse(`${t.url}/api/chat/runs/${requestId}/events`, { headers: { 'last-event-id': String(asked.id) } });
    expect(replay.events.map((e) => e.event)).toEqual(expect.arrayContaining(['approval_decided', 'tool_progress', 'done']));
    expect(replay.events.at(-1)!.data).toMatchObject({ stopReason: 'final_answer' });
    expect((await toolResults(requestId)).filter((o) => o === 'success')).toHaveLength(1);
  });

  it('pause while waiting voids the approval and pauses before the call; resume asks again with a new approval', async () => {
    scriptRead();
    const turn = startTurn(t, {});
    const asked = await turn.asked;
    const requestId = asked.data.requestId as string;
    expect((await post(`/api/chat/runs/${requestId}/pause`, {})).status).toBe(202);
    const first = await turn.stream;
    const paused = first.events.at(-1)!;
    expect(paused.event).toBe('paused');
    expect((await getJson(`/api/chat/runs/${requestId}`)).status).toBe('paused');
    expect((await getJson(`/api/chat/runs/${requestId}/approvals`))[0]).toMatchObject({ status: 'void', decisionReason: 'paused' });
    expect((await decide(requestId, asked.data.approvalId as string, { decision: 'approve' })).status).toBe(409);
    expect(await toolResults(requestId)).not.toContain('success');

    const resumed: SseEvent[] = [];
    const stream = sse(`${t.url}/api/chat/messages_two_stage/resume`, {
      body: { requestId, resumeFromPhaseIndex: paused.data.resumeFromPhaseIndex },
      onEvent: (e) => void resumed.push(e),
    });
    const again = await waitFor(() => resumed.find((e) => e.event === 'approval_required'), { what: 'the second approval_required' });
    expect(again.data.approvalId).not.toBe(asked.data.approvalId);
    expect((await decide(requestId, again.data.approvalId as string, { decision: 'approve' })).status).toBe(200);
    const second = await stream;
    checkEnvelope([...first.events, ...second.events]);
    expect(second.events.at(-1)!.data).toMatchObject({ stopReason: 'final_answer' });
    expect((await toolResults(requestId)).filter((o) => o === 'success')).toHaveLength(1);
    expect(modelSaw(1)).toContain('Ship it.');
  });

  it('the conversation setting "always" asks for a call no policy names', async () => {
    llm.enqueue(respond.turn([{ toolCall: { name: 'list_files', args: {} } }]), respond.turn([{ text: 'Listed.' }]));
    const conv = await (await post('/api/chat/messages_two_stage', { content: '/help' })).text();
    const conversationId = /"conversationId":"([^"]+)"/.exec(conv)![1];
    const patched = await fetch(`${t.url}/api/chat/conversations/${conversationId}/settings`, {
      method: 'PATCH',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ approvals: 'always' }),
    });
    expect(patched.status).toBe(200);
    expect((await patched.json()).settings).toMatchObject({ approvals: 'always' });
    const turn = startTurn(t, { conversationId, content: 'List the files' });
    const asked = await turn.asked;
    expect(asked.data).toMatchObject({ tool: 'list_files', reason: 'conversation_always' });
    await decide(asked.data.requestId as string, asked.data.approvalId as string, { decision: 'approve' });
    expect((await turn.stream).events.at(-1)!.data).toMatchObject({ stopReason: 'final_answer' });
  });

  it('the sweeper closes a run whose instance died while it waited with no checkpoint to continue from (instance_lost) and voids its approval', async () => {
    // (a unified run that stored the checkpoint of its waiting step is taken over instead: approval-takeover-unified.e2e-spec.ts)
    const ds = t.app.get(DataSource);
    llm.enqueue(respond.turn([{ text: 'hi' }]));
    const res = await sse(`${t.url}/api/chat/messages_two_stage`, { body: { content: 'x' } });
    const conversationId = res.events[0].data.conversationId as string;
    const requestId = '22222222-2222-4222-8222-222222222222';
    const approvalId = '33333333-3333-4333-8333-333333333333';
    await ds.query(
      `INSERT INTO runs (request_id, conversation_id, project_id, protocol, status, lease_owner, lease_expires_at)
       VALUES ($1, $2, 'default', 'unified', 'awaiting_approval', 'dead-host', now() - interval '1 minute')`,
      [requestId, conversationId],
    );
    await ds.query(
      `INSERT INTO approvals (id, request_id, project_id, tool, call_id, arguments, reason, status, expires_at)
       VALUES ($1, $2, 'default', 'read_file', 'call_1', '{}'::jsonb, 'configured', 'pending', now() + interval '1 hour')`,
      [approvalId, requestId],
    );
    expect(await t.app.get(RunSweeperService).sweep()).toEqual([requestId]);
    expect((await getJson(`/api/chat/runs/${requestId}`)).status).toBe('failed');
    expect((await getJson(`/api/chat/runs/${requestId}/approvals`))[0]).toMatchObject({ status: 'void', decisionReason: 'instance_lost' });
    expect((await decide(requestId, approvalId, { decision: 'approve' })).status).toBe(409);
  });

  it('unknown approvals are 404; of two concurrent decisions exactly one wins', async () => {
    scriptRead();
    const turn = startTurn(t, {});
    const asked = await turn.asked;
    const requestId = asked.data.requestId as string;
    const unknown = await decide(requestId, '00000000-0000-4000-8000-000000000000', { decision: 'approve' });
    expect(unknown.status).toBe(404);
    expect((await unknown.json()).error).toBe('approval_not_found');
    expect((await decide('00000000-0000-4000-8000-000000000001', asked.data.approvalId as string, { decision: 'approve' })).status).toBe(404);
    // two decisions at once: exactly one wins
    const both = await Promise.all([decide(requestId, asked.data.approvalId as string, { decision: 'deny' }), decide(requestId, asked.data.approvalId as string, { decision: 'approve' })]);
    expect(both.map((r) => r.status).sort()).toEqual([200, 409]);
    await turn.stream;
  });
});

describeProjectBoundApprovals('approvals with keys bound to projects', { TWO_STAGE_ENABLED: 'true' }, (t, body, headers) => startTurn(t, body, headers));
