import { approvalEnv as env, describeProjectBoundApprovals, seedWorkspace } from '../support/approval-cases';
import { startApp, type TestApp } from '../support/app';
import { ReplayServer, respond } from '../support/replay-server';
import { checkEnvelope, sse, type SseEvent } from '../support/sse-client';
import { waitFor } from '../support/wait-for';

/**
 * Approvals (issue 32) on the unified route: in a step with several calls, the calls that need no
 * approval run first; the step asks for the others and calls the model again only once every one
 * is decided. Approve runs the call once, deny reaches the model as a declined result, a timeout
 * denies, an invalid edit changes nothing, a second decision is 409, another project's key 404,
 * and the run reads awaiting_approval while any approval is pending. Runs on PGlite, and on
 * PostgreSQL with DATABASE_URL.
 */
type Headers = Record<string, string>;
type TraceRow = { type: string; details: Record<string, unknown> };

/** A unified turn: the stream, its events so far, and the approval_required events as they come. */
function startTurn(t: TestApp, body: Record<string, unknown>, headers: Headers = {}) {
  const events: SseEvent[] = [];
  const stream = sse(`${t.url}/api/chat/messages`, {
    body: { content: 'Summarize the roadmap', ...body },
    headers,
    timeoutMs: 30_000,
    onEvent: (e) => void events.push(e),
  });
  const asked = (n = 1) => waitFor(() => {
    const got = events.filter((e) => e.event === 'approval_required');
    return got.length >= n ? got : undefined;
  }, { what: `${n} approval_required` });
  return { stream, asked, events };
}

describe('approvals on the unified route', () => {
  let llm: ReplayServer;
  let t: TestApp;
  const post = (path: string, body: unknown, headers: Headers = {}) =>
    fetch(`${t.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  const getJson = async (path: string) => (await fetch(`${t.url}${path}`)).json();
  const decide = (requestId: string, approvalId: string, body: unknown) => post(`/api/chat/runs/${requestId}/approvals/${approvalId}`, body);
  /** the calls that ran, counted at the runner: its tool_result trace rows with outcome success (a waiting or denied call is traced with its own outcome) */
  const ran = async (requestId: string) =>
    ((await getJson(`/api/trace?requestId=${requestId}&type=tool_result`)) as TraceRow[]).filter((r) => r.details.outcome === 'success').map((r) => String(r.details.tool ?? r.details.name));
  const modelSaw = (i: number) => JSON.stringify(llm.chatRequests[i].body.messages);
  const status = async (requestId: string) => (await getJson(`/api/chat/runs/${requestId}`)).status as string;
  /** one step: list_files (needs no approval) and read_file (waits), then an answer */
  const scriptListAndRead = (args: Record<string, unknown> = { path: 'docs/roadmap.md' }) =>
    llm.enqueue(
      respond.turn([{ text: 'Let me look. ' }, { toolCall: { name: 'list_files', args: { path: 'docs' }, id: 'call_list' } }, { toolCall: { name: 'read_file', args, id: 'call_read' } }]),
      respond.turn([{ text: 'Here is my answer.' }]),
    );

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

  it('the call that needs no approval runs first; the waiting one runs only when approved, exactly once; a second decision is 409', async () => {
    scriptListAndRead();
    const turn = startTurn(t, {});
    const [asked] = await turn.asked();
    const requestId = asked.data.requestId as string;
    const approvalId = asked.data.approvalId as string;
    expect(turn.events[0].data.protocol).toBe('unified');
    expect(asked.data).toMatchObject({ tool: 'read_file', callId: 'call_read', arguments: { path: 'docs/roadmap.md' }, reason: 'configured', expiresAt: expect.any(String) });
    // the step asks after its other call finished: list_files ran before the question, read_file did not
    const before = turn.events.slice(0, turn.events.indexOf(asked)).filter((e) => e.event === 'tool_progress').map((e) => `${e.data.tool}:${e.data.action}`);
    expect(before).toContain('list_files:completed');
    expect(before).not.toContain('read_file:completed');
    expect(await ran(requestId)).toEqual(['list_files']);
    expect(llm.chatRequests).toHaveLength(1);
    expect(await status(requestId)).toBe('awaiting_approval');
    expect(await getJson(`/api/chat/runs/${requestId}/approvals`)).toEqual([expect.objectContaining({ approvalId, status: 'pending', decision: null, tool: 'read_file' })]);

    const ok = await decide(requestId, approvalId, { decision: 'approve' });
    expect(ok.status).toBe(200);
    expect(await ok.json()).toMatchObject({ status: 'approved', decision: 'approve', edited: false, by: null });
    const res = await turn.stream;
    checkEnvelope(res.events);
    expect(res.events.filter((e) => e.event === 'done')).toHaveLength(1);
    expect(res.events.find((e) => e.event === 'approval_decided')!.data).toMatchObject({ approvalId, decision: 'approve', edited: false, by: null });
    expect(res.events.at(-1)!.data).toMatchObject({ stopReason: 'final_answer' });
    expect((await ran(requestId)).sort()).toEqual(['list_files', 'read_file']);
    expect(llm.chatRequests).toHaveLength(2);
    expect(modelSaw(1)).toContain('Ship it.');
    expect(modelSaw(1)).toContain('roadmap.md'); // list_files' result
    expect(await status(requestId)).toBe('completed');

    const again = await decide(requestId, approvalId, { decision: 'deny' });
    expect(again.status).toBe(409);
    expect(await again.json()).toMatchObject({ error: 'approval_not_pending', status: 'approved' });
    const trace = (await getJson(`/api/trace?requestId=${requestId}`)) as TraceRow[];
    expect(trace.filter((r) => r.type === 'approval_requested')).toHaveLength(1);
    expect(trace.find((r) => r.type === 'approval_decided')!.details).toMatchObject({ decision: 'approve', edited: false, keyId: null, waitMs: expect.any(Number) });
  });

  it('deny reaches the model as a declined result and the turn ends with an answer; the waiting tool never runs', async () => {
    scriptListAndRead();
    const turn = startTurn(t, {});
    const [asked] = await turn.asked();
    const requestId = asked.data.requestId as string;
    expect((await decide(requestId, asked.data.approvalId as string, { decision: 'deny', reason: 'not that file today' })).status).toBe(200);
    const res = await turn.stream;
    expect(res.events.find((e) => e.event === 'approval_decided')!.data).toMatchObject({ decision: 'deny', reason: 'not that file today' });
    expect(res.events.find((e) => e.event === 'tool_progress' && e.data.tool === 'read_file' && e.data.action !== 'calling')!.data).toMatchObject({ action: 'failed', outcome: 'denied' });
    expect(res.events.at(-1)!.data).toMatchObject({ stopReason: 'final_answer' });
    expect(modelSaw(1)).toContain('declined');
    expect(modelSaw(1)).toContain('not that file today');
    expect(modelSaw(1)).not.toContain('Ship it.');
    expect(await ran(requestId)).toEqual(['list_files']);
    expect(await status(requestId)).toBe('completed');
  });

  it('an invalid edit is 400 and changes nothing; a valid edit runs with the edited arguments', async () => {
    scriptListAndRead();
    const turn = startTurn(t, {});
    const [asked] = await turn.asked();
    const requestId = asked.data.requestId as string;
    const approvalId = asked.data.approvalId as string;
    const bad = await decide(requestId, approvalId, { decision: 'approve', arguments: { path: 5 } });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ error: 'invalid_approval', errors: expect.any(Array) });
    expect((await decide(requestId, approvalId, { decision: 'maybe' })).status).toBe(400);
    expect((await getJson(`/api/chat/runs/${requestId}/approvals`))[0]).toMatchObject({ status: 'pending', decision: null });
    expect(await status(requestId)).toBe('awaiting_approval');
    expect(await ran(requestId)).toEqual(['list_files']);
    expect(llm.chatRequests).toHaveLength(1);

    const ok = await decide(requestId, approvalId, { decision: 'approve', arguments: { path: 'docs/other.md' } });
    expect(await ok.json()).toMatchObject({ status: 'approved', edited: true, editedArguments: { path: 'docs/other.md' } });
    const res = await turn.stream;
    expect(res.events.find((e) => e.event === 'approval_decided')!.data).toMatchObject({ decision: 'approve', edited: true });
    expect(modelSaw(1)).toContain('The other file says hello.');
    expect(modelSaw(1)).not.toContain('Ship it.');
    expect(res.events.at(-1)!.data).toMatchObject({ stopReason: 'final_answer' });
  });

  it('an approval that times out is a denial with reason timeout', async () => {
    scriptListAndRead();
    const turn = startTurn(t, { options: { approvalTimeoutMs: 1000 } });
    const [asked] = await turn.asked();
    const res = await turn.stream;
    expect(res.events.find((e) => e.event === 'approval_decided')!.data).toMatchObject({ decision: 'deny', by: 'timeout', reason: 'timeout' });
    expect(res.events.at(-1)!.data).toMatchObject({ stopReason: 'final_answer' });
    expect(modelSaw(1)).toContain('declined');
    expect(await ran(asked.data.requestId as string)).toEqual(['list_files']);
    expect((await getJson(`/api/chat/runs/${asked.data.requestId}/approvals`))[0]).toMatchObject({ status: 'expired', decision: 'deny', by: 'timeout' });
    expect((await decide(asked.data.requestId as string, asked.data.approvalId as string, { decision: 'approve' })).status).toBe(409);
  });

  it('two approvals in one step: the run stays awaiting_approval until the last is decided, then runs on', async () => {
    llm.enqueue(
      respond.turn([
        { toolCall: { name: 'read_file', args: { path: 'docs/roadmap.md' }, id: 'call_a' } },
        { toolCall: { name: 'read_file', args: { path: 'docs/other.md' }, id: 'call_b' } },
      ]),
      respond.turn([{ text: 'Both considered.' }]),
    );
    const turn = startTurn(t, {});
    const [first, second] = await turn.asked(2);
    const requestId = first.data.requestId as string;
    expect([first.data.callId, second.data.callId]).toEqual(['call_a', 'call_b']);
    expect(first.data.approvalId).not.toBe(second.data.approvalId);
    await waitFor(async () => (await getJson(`/api/chat/runs/${requestId}/approvals`)).length === 2, { what: 'both approvals stored' });
    expect(await status(requestId)).toBe('awaiting_approval');

    expect((await decide(requestId, second.data.approvalId as string, { decision: 'deny', reason: 'only the roadmap' })).status).toBe(200);
    await waitFor(() => turn.events.find((e) => e.event === 'approval_decided'), { what: 'the first approval_decided' });
    // one still pending: the run still waits, nothing ran, the model was not called again
    expect(await status(requestId)).toBe('awaiting_approval');
    expect(await ran(requestId)).toEqual([]);
    expect(llm.chatRequests).toHaveLength(1);

    expect((await decide(requestId, first.data.approvalId as string, { decision: 'approve' })).status).toBe(200);
    const res = await turn.stream;
    expect(res.events.filter((e) => e.event === 'approval_decided').map((e) => [e.data.approvalId, e.data.decision])).toEqual([
      [second.data.approvalId, 'deny'],
      [first.data.approvalId, 'approve'],
    ]);
    expect(res.events.at(-1)!.data).toMatchObject({ stopReason: 'final_answer' });
    expect(['running', 'completed']).toContain(await status(requestId));
    await waitFor(async () => (await status(requestId)) === 'completed', { what: 'the run to complete' });
    expect(await ran(requestId)).toEqual(['read_file']);
    expect(modelSaw(1)).toContain('Ship it.');
    expect(modelSaw(1)).toContain('only the roadmap');
    expect(modelSaw(1)).not.toContain('The other file says hello.');
  });

  it('the stored answer keeps the decided approvals as steps, so a reloaded conversation shows them without asking', async () => {
    scriptListAndRead();
    const turn = startTurn(t, {});
    const [asked] = await turn.asked();
    await decide(asked.data.requestId as string, asked.data.approvalId as string, { decision: 'deny', reason: 'not now' });
    const res = await turn.stream;
    const msgs = await getJson(`/api/chat/conversations/${res.events[0].data.conversationId}/messages`);
    const answer = msgs.find((m: { role: string; requestId: string }) => m.role === 'assistant' && m.requestId === asked.data.requestId);
    expect(answer.steps.filter((s: { type: string }) => s.type === 'approval')).toEqual([
      expect.objectContaining({ type: 'approval', approvalId: asked.data.approvalId, tool: 'read_file', callId: 'call_read', arguments: expect.objectContaining({ path: 'docs/roadmap.md' }), reason: 'configured', status: 'denied', decision: 'deny', by: null, edited: false, decisionReason: 'not now' }),
    ]);
  });
});

describeProjectBoundApprovals('approvals on the unified route with keys bound to projects', {}, (t, body, headers) => {
  const turn = startTurn(t, body, headers);
  return { stream: turn.stream, asked: turn.asked().then(([first]) => first) };
});
