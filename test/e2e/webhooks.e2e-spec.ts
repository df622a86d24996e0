import { DataSource } from 'typeorm';
import { RunSweeperService } from '../../src/runs/run-sweeper.service';
import { startApp, type TestApp } from '../support/app';
import { onPostgres } from '../support/db';
import { ReplayServer, respond } from '../support/replay-server';
import { sse, type SseEvent } from '../support/sse-client';
import { waitFor } from '../support/wait-for';
import { WebhookReceiver } from '../support/webhook-receiver';

const json = async (res: Response) => ({ status: res.status, body: (await res.json()) as Record<string, any> });
const put = (url: string, body: unknown) => fetch(url, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }).then(json);
const post = (url: string, body?: unknown) => fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) }).then(json);

/**
 * Issue 33: a run's end is announced by a signed POST (Standard Webhooks), from an outbox row
 * written with the run's close. The receiver is on 127.0.0.1 (WEBHOOK_ALLOW_PRIVATE=true) and
 * verifies every request with the `standardwebhooks` package, as a customer's would.
 */
describe(`webhooks when a run ends (${onPostgres() ? 'PostgreSQL' : 'PGlite'})`, () => {
  let llm: ReplayServer;
  let t: TestApp;
  let hooks: WebhookReceiver;
  let secret: string;

  beforeAll(async () => {
    llm = await ReplayServer.start();
    hooks = await WebhookReceiver.start();
    t = await startApp({
      LLM_PROVIDER: 'openai',
      LLM_BASE_URL: llm.openAiBaseUrl,
      LLM_MODEL: 'scripted-model',
      TWO_STAGE_ENABLED: 'true',
      WEBHOOK_ALLOW_PRIVATE: 'true',
      // a fast schedule: the retries of a test arrive within a second
      WEBHOOK_RETRY_BASE_MS: '50',
      WEBHOOK_POLL_MS: '50',
      TOOLS_REQUIRE_APPROVAL: 'read_file',
      // issue 46: the announced usage carries the turn's cost
      LLM_PRICES: JSON.stringify({ 'scripted-model': { input: 2, output: 10 } }),
    });
    const created = await put(`${t.url}/api/admin/projects/default/webhook`, {});
    expect(created.status).toBe(200);
    secret = created.body.secret;
    hooks.secrets = [secret];
  }, 120_000);
  afterAll(async () => {
    await t.close();
    await hooks.close();
    await llm.close();
  });
  beforeEach(() => llm.reset());

  const send = (content: string, body: Record<string, unknown> = {}, route = 'messages') =>
    sse(`${t.url}/api/chat/${route}`, { body: { content, webhookUrl: hooks.url(), ...body } });
  const endOf = (events: SseEvent[]) => events.find((e) => e.event === 'done')!;
  const log = async (requestId: string) => (await json(await fetch(`${t.url}/api/chat/runs/${requestId}/webhooks`))).body;
  /** waits until the run's one event is delivered (or failed) and returns the log */
  const settled = (requestId: string) =>
    waitFor(async () => {
      const l = await log(requestId);
      return l.deliveries?.length && l.deliveries.every((d: { state: string }) => d.state !== 'pending') ? l : null;
    }, { what: `the webhooks of ${requestId} to settle`, timeoutMs: 10_000 });

  it('the admin route creates the signing secret once and never shows it again; a bad URL is a 400 that changes nothing', async () => {
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    const again = await put(`${t.url}/api/admin/projects/default/webhook`, {});
    expect(again.status).toBe(200);
    expect(again.body.secret).toBeUndefined();
    const shown = await json(await fetch(`${t.url}/api/admin/projects/default/webhook`));
    expect(shown.body).toEqual({ projectId: 'default', url: null, secretCreatedAt: expect.any(String), previousSecretValidUntil: null });
    for (const url of ['not a url', 'ftp://example.com/x', `https://example.com/${'a'.repeat(2100)}`, 42]) {
      expect((await put(`${t.url}/api/admin/projects/default/webhook`, { url })).status).toBe(400);
    }
    expect((await put(`${t.url}/api/admin/projects/bad..id/webhook`, {})).status).toBe(400);
    expect((await json(await fetch(`${t.url}/api/admin/projects/default/webhook`))).body.url).toBeNull();
    expect((await json(await fetch(`${t.url}/api/admin/projects/nowhere/webhook`))).status).toBe(404);
  });

  it.each([
    ['unified', 'messages'],
    ['two-stage', 'messages_two_stage'],
  ])('a completed run on the %s route is announced once, signed, with its answer and usage', async (_name, route) => {
    llm.setFallback(respond.turn([{ text: 'The answer is 42.' }, { finish: 'stop', usage: { promptTokens: 11, completionTokens: 5 } }]));
    const res = await send('What is the answer?', {}, route);
    expect(res.status).toBe(200);
    const done = endOf(res.events).data;
    const requestId = done.requestId as string;
    const l = await settled(requestId);
    const got = hooks.about(requestId);
    expect(got).toHaveLength(1);
    expect(got[0].verified).toBe(true);
    expect(got[0].payload).toEqual({
      type: 'run.completed',
      requestId,
      conversationId: done.conversationId,
      projectId: 'default',
      status: 'completed',
      stopReason: done.stopReason,
      answer: done.fullContent,
      answerTruncated: false,
      usage: done.usage,
      at: expect.any(String),
    });
    // (11 × 2 + 5 × 10) / 1e6
    expect((got[0].payload as { usage: { cost: number } }).usage.cost).toBeCloseTo(0.000072, 12);
    expect(l.deliveries).toEqual([
      expect.objectContaining({ webhookId: got[0].id, type: 'run.completed', url: hooks.url(), state: 'delivered', attempts: 1, nextAttemptAt: null, lastError: null, tries: [expect.objectContaining({ attempt: 1, statusCode: 204, error: null })] }),
    ]);
  });

  it('a failed run is announced as run.failed', async () => {
    llm.setFallback(respond.status(400, { message: 'bad request from the model server' }));
    const res = await send('This will fail');
    const done = endOf(res.events).data;
    expect(done.stopReason).toBe('error');
    await settled(done.requestId as string);
    const [got] = hooks.about(done.requestId as string);
    expect(got.payload).toMatchObject({ type: 'run.failed', status: 'failed', stopReason: 'error' });
    expect(got.verified).toBe(true);
  });

  it('a cancelled run is announced as run.cancelled, with the answer it had', async () => {
    llm.setFallback(respond.turn([{ text: 'Partial ' }, { text: 'words' }], { faults: { stallAfter: 2 } }));
    let requestId = '';
    const res = await sse(`${t.url}/api/chat/messages`, {
      body: { content: 'Say a lot', webhookUrl: hooks.url() },
      onEvent: (e) => {
        if (!requestId && e.data.requestId) {
          requestId = e.data.requestId as string;
          void post(`${t.url}/api/chat/runs/${requestId}/cancel`);
        }
      },
    });
    const done = endOf(res.events).data;
    expect(done.stopReason).toBe('cancelled');
    await settled(requestId);
    const got = hooks.about(requestId);
    expect(got).toHaveLength(1);
    expect(got[0].payload).toMatchObject({ type: 'run.cancelled', status: 'cancelled', stopReason: 'cancelled', answer: done.fullContent });
  });

  it('a receiver that answers 500 twice gets the event on the third try, with the same webhook-id', async () => {
    llm.setFallback(respond.turn([{ text: 'Retry me.' }, { finish: 'stop' }]));
    hooks.answerNext(500, 500, 200);
    const done = endOf((await send('Retry')).events).data;
    const requestId = done.requestId as string;
    const l = await settled(requestId);
    const got = hooks.about(requestId);
    expect(got.map((g) => g.answered)).toEqual([500, 500, 200]);
    expect(new Set(got.map((g) => g.id)).size).toBe(1);
    expect(new Set(got.map((g) => g.body)).size).toBe(1);
    expect(got.every((g) => g.verified)).toBe(true);
    expect(l.deliveries[0]).toMatchObject({ webhookId: got[0].id, state: 'delivered', attempts: 3 });
    expect(l.deliveries[0].tries.map((x: { statusCode: number; error: string | null }) => [x.statusCode, x.error])).toEqual([
      [500, 'HTTP 500'],
      [500, 'HTTP 500'],
      [200, null],
    ]);
  });

  it('a redirect is not followed: it is a failed try', async () => {
    llm.setFallback(respond.turn([{ text: 'Moved?' }, { finish: 'stop' }]));
    hooks.answerNext(302, 204);
    const done = endOf((await send('Redirect')).events).data;
    const l = await settled(done.requestId as string);
    expect(l.deliveries[0].tries.map((x: { statusCode: number; error: string | null }) => [x.statusCode, x.error])).toEqual([
      [302, 'redirect (302) not followed'],
      [204, null],
    ]);
  });

  it('a slow receiver never blocks a turn: done arrives, and the next turn runs, while it holds the request', async () => {
    llm.setFallback(respond.turn([{ text: 'Quick.' }, { finish: 'stop' }]));
    let release: () => void = () => undefined;
    hooks.answerNext({ hold: new Promise<void>((r) => (release = r)), status: 200 });
    const first = endOf((await send('First')).events).data;
    const requestId = first.requestId as string;
    await waitFor(() => hooks.about(requestId).length === 1, { what: 'the held webhook to reach the receiver' });
    // the receiver still holds it; another turn runs to its end meanwhile
    const second = await send('Second');
    expect(endOf(second.events).data.stopReason).toBe('final_answer');
    expect(hooks.about(requestId)[0].answered).toBeUndefined();
    release();
    const l = await settled(requestId);
    expect(l.deliveries[0]).toMatchObject({ state: 'delivered', attempts: 1 });
  });

  it('a receiver that never answers holds up no other delivery: a fast receiver gets its event while that request is still open', async () => {
    llm.setFallback(respond.turn([{ text: 'Quick.' }, { finish: 'stop' }]));
    const fast = await WebhookReceiver.start();
    fast.secrets = [secret];
    // a receiver of its own: a late delivery of an earlier test cannot take the held answer
    const slow = await WebhookReceiver.start();
    slow.secrets = [secret];
    try {
      let release: () => void = () => undefined;
      slow.answerNext({ hold: new Promise<void>((r) => (release = r)), status: 200 });
      const held = endOf((await send('Hanging receiver', { webhookUrl: slow.url() })).events).data.requestId as string;
      await waitFor(() => slow.about(held).length === 1, { what: 'the held webhook to reach the hanging receiver' });
      const other = endOf((await send('Fast receiver', { webhookUrl: fast.url() })).events).data.requestId as string;
      // longer than the try timeout (10 s): without independent tries the fast one arrives only after the held try gave up
      await waitFor(() => fast.about(other).length === 1, { what: 'the fast receiver to get its event', timeoutMs: 20_000 });
      // the held try is still in flight: not answered, nothing recorded for it yet
      expect(slow.about(held)[0].answered).toBeUndefined();
      expect((await log(held)).deliveries[0]).toMatchObject({ state: 'pending', lastError: null });
      expect(fast.about(other)[0].verified).toBe(true);
      release();
      expect((await settled(held)).deliveries[0]).toMatchObject({ state: 'delivered', attempts: 1 });
    } finally {
      await fast.close();
      await slow.close();
    }
  }, 60_000);

  it('a project default URL is used when the message names none', async () => {
    llm.setFallback(respond.turn([{ text: 'Default.' }, { finish: 'stop' }]));
    expect((await put(`${t.url}/api/admin/projects/default/webhook`, { url: hooks.url('/default') })).body.url).toBe(hooks.url('/default'));
    try {
      const done = endOf((await sse(`${t.url}/api/chat/messages`, { body: { content: 'no url' } })).events).data;
      const l = await settled(done.requestId as string);
      expect(l.deliveries[0]).toMatchObject({ url: hooks.url('/default'), state: 'delivered' });
    } finally {
      await put(`${t.url}/api/admin/projects/default/webhook`, { url: null });
    }
    // without either, nothing is written
    const done = endOf((await sse(`${t.url}/api/chat/messages`, { body: { content: 'no url at all' } })).events).data;
    expect((await log(done.requestId as string)).deliveries).toEqual([]);
  });

  it('a message webhookUrl is validated: a 400 stores nothing; a project without a secret is refused', async () => {
    const count = async () => Number((await t.app.get(DataSource).query('SELECT count(*)::int AS n FROM runs'))[0].n);
    const before = await count();
    for (const webhookUrl of ['not a url', 'ftp://example.com/x', 'javascript:alert(1)', `https://example.com/${'a'.repeat(2100)}`, 42, 'https://user:pw@example.com/']) {
      const res = await post(`${t.url}/api/chat/messages`, { content: 'x', webhookUrl });
      expect([res.status, JSON.stringify(res.body)]).toEqual([400, expect.stringContaining('webhookUrl')]);
    }
    const noSecret = await post(`${t.url}/api/chat/messages`, { content: 'x', projectId: 'other', webhookUrl: hooks.url() });
    expect(noSecret.status).toBe(400);
    expect(noSecret.body.error).toBe('webhook_not_configured');
    expect(await count()).toBe(before);
  });

  it('a rotated secret: both signatures during the grace period; receivers with either secret verify', async () => {
    const rotated = await post(`${t.url}/api/admin/projects/default/webhook/rotate-secret`);
    expect(rotated.status).toBe(200);
    const next = rotated.body.secret as string;
    expect(next).not.toBe(secret);
    expect(Date.parse(rotated.body.previousSecretValidUntil)).toBeGreaterThan(Date.now());
    llm.setFallback(respond.turn([{ text: 'Rotated.' }, { finish: 'stop' }]));
    const done = endOf((await send('after rotation')).events).data;
    await settled(done.requestId as string);
    const [got] = hooks.about(done.requestId as string);
    expect(got.signature.split(' ')).toHaveLength(2);
    hooks.secrets = [next];
    const { Webhook } = await import('standardwebhooks');
    const headers = { 'webhook-id': got.id, 'webhook-timestamp': got.timestamp, 'webhook-signature': got.signature };
    expect(() => new Webhook(next).verify(got.body, headers)).not.toThrow();
    expect(() => new Webhook(secret).verify(got.body, headers)).not.toThrow();
    // the secrets are not in the delivery log, nor in the trace
    const logText = JSON.stringify(await log(done.requestId as string));
    const trace = await (await fetch(`${t.url}/api/trace?requestId=${done.requestId}`)).text();
    for (const s of [secret, next]) {
      expect(logText).not.toContain(s.slice(6));
      expect(trace).not.toContain(s.slice(6));
    }
    secret = next;
  });

  it('a run closed by the sweeper (its instance died) is announced with the answer rebuilt from its chunks', async () => {
    const ds = t.app.get(DataSource);
    const conversationId = endOf((await send('a conversation')).events).data.conversationId as string;
    llm.setFallback(respond.turn([{ text: 'x' }, { finish: 'stop' }]));
    const requestId = '22222222-2222-4222-8222-222222222222';
    await ds.query(
      `INSERT INTO runs (request_id, conversation_id, project_id, protocol, status, options, lease_owner, lease_expires_at)
       VALUES ($1, $2, 'default', 'unified', 'running', $3, 'dead-host', now() - interval '1 minute')`,
      [requestId, conversationId, JSON.stringify({ webhookUrl: hooks.url() })],
    );
    const base = { requestId, projectId: 'default', conversationId, phase: 'action_phase', phaseIndex: 1, cycleIndex: 0 };
    await ds.query(`INSERT INTO run_events (request_id, seq, type, data) VALUES ($1, 1, 'chunk', $2), ($1, 2, 'chunk', $3)`, [
      requestId,
      JSON.stringify({ ...base, seq: 1, content: 'Half an ' }),
      JSON.stringify({ ...base, seq: 2, content: 'answer' }),
    ]);
    expect(await t.app.get(RunSweeperService).sweep()).toEqual([requestId]);
    await settled(requestId);
    const got = hooks.about(requestId);
    expect(got).toHaveLength(1);
    expect(got[0].payload).toMatchObject({ type: 'run.failed', status: 'failed', stopReason: 'error', answer: 'Half an answer', conversationId });
  });

  it('a paused run that is cancelled is announced as run.cancelled', async () => {
    const ds = t.app.get(DataSource);
    const conversationId = endOf((await send('another conversation')).events).data.conversationId as string;
    const requestId = '33333333-3333-4333-8333-333333333333';
    await ds.query(`INSERT INTO runs (request_id, conversation_id, project_id, protocol, status, options) VALUES ($1, $2, 'default', 'two-stage', 'paused', $3)`, [
      requestId,
      conversationId,
      JSON.stringify({ webhookUrl: hooks.url() }),
    ]);
    const base = { requestId, projectId: 'default', conversationId, phase: 'action_phase', phaseIndex: 1, cycleIndex: 0 };
    await ds.query(`INSERT INTO run_events (request_id, seq, type, data) VALUES ($1, 1, 'chunk', $2)`, [requestId, JSON.stringify({ ...base, seq: 1, content: 'Paused text' })]);
    expect((await post(`${t.url}/api/chat/runs/${requestId}/cancel`)).status).toBe(202);
    await settled(requestId);
    expect(hooks.about(requestId).map((g) => g.payload)).toEqual([expect.objectContaining({ type: 'run.cancelled', status: 'cancelled', answer: 'Paused text' })]);
  });

  it('a run that starts waiting for a person is announced (run.awaiting_approval), once, then its end', async () => {
    // read_file waits for a person in this app (TOOLS_REQUIRE_APPROVAL); the model calls it, then answers
    llm.enqueue(respond.turn([{ toolCall: { name: 'list_files', args: {} } }]), respond.turn([{ toolCall: { name: 'read_file', args: { path: 'missing.md' } } }]), respond.turn([{ text: 'Done.' }]));
    const events: SseEvent[] = [];
    const stream = sse(`${t.url}/api/chat/messages_two_stage`, { body: { content: 'approval please', webhookUrl: hooks.url() }, onEvent: (e) => void events.push(e) });
    const asked = await waitFor(() => events.find((e) => e.event === 'approval_required'), { what: 'approval_required' });
    const requestId = asked.data.requestId as string;
    await waitFor(() => hooks.about(requestId).length === 1, { what: 'the awaiting_approval event' });
    expect(hooks.about(requestId)[0]).toMatchObject({ verified: true, payload: { type: 'run.awaiting_approval', status: 'awaiting_approval', answer: null, requestId } });
    expect((await post(`${t.url}/api/chat/runs/${requestId}/approvals/${asked.data.approvalId}`, { decision: 'approve' })).status).toBe(200);
    const done = endOf((await stream).events).data;
    expect(done.stopReason).toBe('final_answer');
    const l = await settled(requestId);
    expect(l.deliveries.map((d: { type: string; state: string }) => [d.type, d.state])).toEqual([
      ['run.awaiting_approval', 'delivered'],
      ['run.completed', 'delivered'],
    ]);
    expect(hooks.about(requestId)[1].payload).toMatchObject({ type: 'run.completed', answer: done.fullContent });
    expect(hooks.about(requestId)[1].id).not.toBe(hooks.about(requestId)[0].id);
  });

  it('the delivery log is a 404 for an unknown run', async () => {
    expect((await fetch(`${t.url}/api/chat/runs/44444444-4444-4444-8444-444444444444/webhooks`)).status).toBe(404);
  });
});
