import { createHash } from 'node:crypto';
import { startApp, type TestApp } from '../support/app';
import { describeOnPostgres } from '../support/db';
import { ReplayServer, respond } from '../support/replay-server';
import { waitFor } from '../support/wait-for';
import { WebhookReceiver } from '../support/webhook-receiver';

const KEY = 'budget-admin-key';
const auth = { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' };
/** what a turn under a budget reserves (BUDGET_TURN_RESERVE_TOKENS), and a project budget worth five of them */
const RESERVE = 1000;
const PROJECT_BUDGET = 5 * RESERVE;
/** every scripted turn reports 300 prompt + 100 completion tokens: (300 × 2 + 100 × 8) / 1e6 = 0.0014 at these prices */
const PRICES = { 'scripted-model': { input: 2, output: 8 } };
const TURN_COST = 0.0014;
const usage = { promptTokens: 300, completionTokens: 100 };
/** a turn that streams for about 1.5 s, so all twenty sends meet while the admitted ones run */
const slowTurn = () => respond.turn([{ text: 'one ' }, { text: 'two ' }, { text: 'three' }, { finish: 'stop', usage }], { faults: { delayMs: 500 } });

interface Sent {
  content: string;
  status: number;
  retryAfter: string | null;
  body: string;
}

async function sendTo(url: string, projectId: string, content: string): Promise<Sent> {
  const res = await fetch(`${url}/api/chat/messages`, { method: 'POST', headers: auth, body: JSON.stringify({ content, projectId }) });
  return { content, status: res.status, retryAfter: res.headers.get('retry-after'), body: await res.text() };
}

const api = async <T>(url: string, path: string, init: { method?: string; body?: unknown } = {}): Promise<{ status: number; body: T }> => {
  const res = await fetch(`${url}${path}`, { method: init.method ?? 'GET', headers: auth, ...(init.body !== undefined && { body: JSON.stringify(init.body) }) });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : null) as T };
};

const requestIdOf = (sse: string): string => /"requestId":"([0-9a-f-]{36})"/.exec(sse)![1];
const secondsToUtcMidnight = () => {
  const now = new Date();
  return (Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1) - now.getTime()) / 1000;
};

/**
 * Issue 46 item 3: a project budget is counted in the database at turn granularity. Twenty sends
 * at once (spread over `urls`, one or two instances on one database) against a budget of five
 * turns' reservations: five run, fifteen get 429 budget_exhausted before any model call, and the
 * usage report equals the sum of the five runs' stored usage.
 */
async function twentyAgainstFive(llm: ReplayServer, urls: string[], projectId: string): Promise<void> {
  const [url] = urls;
  expect((await api(url, `/api/admin/projects/${projectId}/budget`, { method: 'PUT', body: { period: 'day', tokens: PROJECT_BUDGET, warnAt: 0.5 } })).status).toBe(200);
  for (let i = 0; i < 20; i++) llm.enqueue(slowTurn());
  const sent = await Promise.all(Array.from({ length: 20 }, (_, i) => sendTo(urls[i % urls.length], projectId, `question ${i}`)));
  const ran = sent.filter((s) => s.status === 200);
  const refused = sent.filter((s) => s.status === 429);
  // the reservation margin is 0 here: every turn's usage (400) is inside its reservation (1000)
  expect(ran).toHaveLength(5);
  expect(refused).toHaveLength(15);
  for (const r of refused) {
    const body = JSON.parse(r.body) as { error: string; message: string; resetsAt: string; retryAfter: number; budget: Record<string, unknown> };
    expect(body.error).toBe('budget_exhausted');
    expect(body.budget).toMatchObject({ scope: 'project', id: projectId, period: 'day', limit: 'tokens', tokens: PROJECT_BUDGET });
    expect(body.message).toContain(`project ${projectId}`);
    expect(body.message).toContain(`resets at ${body.resetsAt}`);
    // what is left and the reservation it did not fit, so a client knows a smaller turn budget could
    expect(body).toMatchObject({ reserved: RESERVE });
    expect(body.message).toMatch(/has \d+ left .* less than this turn's reservation of 1000 tokens/);
    expect(Number(r.retryAfter)).toBe(body.retryAfter);
    expect(Math.abs(Number(r.retryAfter) - secondsToUtcMidnight())).toBeLessThan(30);
  }
  // the model was asked once per admitted turn, and never for a refused one
  expect(llm.chatRequests).toHaveLength(5);
  const asked = llm.chatRequests.map((r) => JSON.stringify(r.body.messages));
  for (const r of refused) expect(asked.some((m) => m.includes(`"${r.content}"`))).toBe(false);
  for (const r of ran) expect(r.body).toContain('event: done');

  const runs = await Promise.all(ran.map(async (r) => (await api<{ usage: { totalTokens: number; cost: number } }>(url, `/api/chat/runs/${requestIdOf(r.body)}`)).body));
  const sum = runs.reduce((a, r) => ({ tokens: a.tokens + r.usage.totalTokens, cost: a.cost + r.usage.cost }), { tokens: 0, cost: 0 });
  expect(sum.tokens).toBe(5 * 400);
  const report = await api<{ totals: { tokens: number; cost: number; turns: number }; groups: Array<{ group: string; tokens: number; cost: number; turns: number }> }>(url, `/api/admin/projects/${projectId}/usage?groupBy=model`);
  expect(report.status).toBe(200);
  expect(report.body.totals).toEqual({ tokens: sum.tokens, cost: expect.closeTo(sum.cost, 9), turns: 5 });
  // the hand-computed figure: five turns at 0.0014
  expect(report.body.totals.cost).toBeCloseTo(5 * TURN_COST, 9);
  expect(report.body.groups).toEqual([{ group: 'scripted-model', tokens: 2000, cost: expect.closeTo(5 * TURN_COST, 9), turns: 5 }]);

  // with the five turns ended their stored 2000 tokens count, not their reservations: three more fit
  const budget = await api<{ spent: { tokens: number }; state: string }>(url, `/api/admin/projects/${projectId}/budget`);
  expect(budget.body).toMatchObject({ spent: { tokens: 2000 }, state: 'ok' });
}

describe('project and key budgets (issue 46)', () => {
  let llm: ReplayServer;
  beforeAll(async () => {
    llm = await ReplayServer.start();
  });
  afterAll(async () => {
    await llm.close();
  });
  beforeEach(() => llm.reset());
  const env = {
    API_KEYS: KEY,
    LLM_PROVIDER: 'openai',
    LLM_BASE_URL: '',
    LLM_MODEL: 'scripted-model',
    RATE_LIMIT_PER_MINUTE: '0',
    MAX_CONCURRENT_TURNS_PER_KEY: '100',
    BUDGET_TURN_RESERVE_TOKENS: String(RESERVE),
    LLM_PRICES: JSON.stringify(PRICES),
  };

  describe('on one instance', () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await startApp({ ...env, LLM_BASE_URL: llm.openAiBaseUrl, WEBHOOK_ALLOW_PRIVATE: 'true', TWO_STAGE_ENABLED: 'true' });
    });
    afterAll(async () => {
      await t?.close();
    });

    it('20 concurrent sends against a budget of 5 turns: 5 run, 15 get 429 budget_exhausted before any model call; the report is the sum of the runs', async () => {
      await twentyAgainstFive(llm, [t.url], 'alpha');
    }, 60_000);

    it("budget.warning past warnAt and budget.reached (once per period) go to the project's webhook URL, signed", async () => {
      const hooks = await WebhookReceiver.start();
      try {
        const secret = (await api<{ secret: string }>(t.url, '/api/admin/projects/epsilon/webhook', { method: 'PUT', body: { url: hooks.url() } })).body.secret;
        hooks.secrets = [secret];
        // room for one reservation (1000 of 1200, past warnAt 0.5); after it the stored 400 + 1000 do not fit
        expect((await api(t.url, '/api/admin/projects/epsilon/budget', { method: 'PUT', body: { period: 'day', tokens: 1200, warnAt: 0.5 } })).status).toBe(200);
        llm.enqueue(respond.turn([{ text: 'hello' }, { finish: 'stop', usage }]));
        expect((await sendTo(t.url, 'epsilon', 'first')).status).toBe(200);
        expect((await sendTo(t.url, 'epsilon', 'second')).status).toBe(429);
        expect((await sendTo(t.url, 'epsilon', 'third')).status).toBe(429);
        const types = () => hooks.received.map((r) => r.payload.type).sort();
        await waitFor(() => (hooks.received.length >= 3 ? true : undefined), { timeoutMs: 15_000, what: 'three webhooks' });
        expect(types()).toEqual(['budget.reached', 'budget.warning', 'run.completed']);
        expect(hooks.received.every((r) => r.verified)).toBe(true);
        const reached = hooks.received.find((r) => r.payload.type === 'budget.reached')!.payload;
        expect(reached).toMatchObject({ type: 'budget.reached', projectId: 'epsilon', budget: { scope: 'project', id: 'epsilon', period: 'day', tokens: 1200, spent: { tokens: 400 } } });
        expect(typeof (reached.budget as { resetsAt: string }).resetsAt).toBe('string');
        // costs to the millionth, as the budget route shows them (no float noise)
        for (const r of hooks.received.filter((h) => String(h.payload.type).startsWith('budget.'))) {
          const cost = (r.payload.budget as { spent: { cost: number } }).spent.cost;
          expect(cost).toBe(Math.round(cost * 1e6) / 1e6);
        }
        // 800 left, less than one reservation of 1000: the budget says reached, as every send is refused
        const state = await api<{ state: string; spent: { tokens: number } }>(t.url, '/api/admin/projects/epsilon/budget');
        expect(state.body).toMatchObject({ state: 'reached', spent: { tokens: 400 } });
      } finally {
        await hooks.close();
      }
    });

    it('the budget routes validate their body with a 400 naming the field, and store nothing', async () => {
      const put = (body: unknown) => api<{ message: unknown }>(t.url, '/api/admin/projects/beta/budget', { method: 'PUT', body });
      for (const [body, field] of [
        [{ period: 'week', tokens: 10 }, 'period'],
        [{ period: 'day', tokens: -5 }, 'tokens'],
        [{ period: 'day', tokens: 1.5 }, 'tokens'],
        [{ period: 'day', cost: 'ten' }, 'cost'],
        [{ period: 'month', tokens: 10, warnAt: 2 }, 'warnAt'],
        [{ period: 'month' }, 'tokens or cost'],
      ] as const) {
        const res = await put(body);
        expect(res.status).toBe(400);
        expect(JSON.stringify(res.body.message)).toContain(field);
      }
      expect((await api(t.url, '/api/admin/projects/beta/budget')).status).toBe(404);
      expect((await api(t.url, '/api/admin/keys/not%20a%20key/budget', { method: 'PUT', body: { period: 'day', tokens: 10 } })).status).toBe(400);
      expect((await api(t.url, '/api/admin/projects/beta/usage?groupBy=week')).status).toBe(400);
      expect((await api(t.url, '/api/admin/projects/beta/usage?from=yesterday')).status).toBe(400);
      // a valid budget reads back as it was sent (warnAt a double, not a 4-byte float: 0.8, not 0.800000011920929)
      expect((await api(t.url, '/api/admin/projects/delta/budget', { method: 'PUT', body: { period: 'day', tokens: 10, warnAt: 0.8 } })).status).toBe(200);
      expect((await api<{ warnAt: number }>(t.url, '/api/admin/projects/delta/budget')).body.warnAt).toBe(0.8);
      expect((await api(t.url, '/api/admin/projects/delta/budget', { method: 'DELETE' })).status).toBe(204);
    });

    it('a fork is a turn that spends: refused with 429 budget_exhausted before any model call or stored run when the budget cannot hold it', async () => {
      // a two-stage turn with one tool call: its checkpoint after the tool phase (phase 2) can be forked
      llm.enqueue(respond.turn([{ toolCall: { name: 'list_files', args: {} } }, { finish: 'tool_calls', usage }]));
      llm.enqueue(respond.turn([{ text: 'There are files.' }, { finish: 'stop', usage }]));
      const parent = await fetch(`${t.url}/api/chat/messages_two_stage`, { method: 'POST', headers: auth, body: JSON.stringify({ content: 'list the files', projectId: 'zeta' }) });
      const parentId = requestIdOf(await parent.text());
      const fork = () => fetch(`${t.url}/api/chat/runs/${parentId}/fork`, { method: 'POST', headers: { ...auth, 'x-orion-project': 'zeta' }, body: JSON.stringify({ fromPhaseIndex: 2 }) });
      // the project's usage report counts its stored runs
      const runsOf = async () => (await api<{ totals: unknown }>(t.url, '/api/admin/projects/zeta/usage')).body.totals;
      const before = JSON.stringify(await runsOf());
      expect((await api(t.url, '/api/admin/projects/zeta/budget', { method: 'PUT', body: { period: 'day', tokens: 1200 } })).status).toBe(200);
      const asked = llm.chatRequests.length;
      // 800 used, 400 left: less than the fork's reservation of 1000
      const refused = await fork();
      const body = (await refused.json()) as { error: string; budget: Record<string, unknown> };
      expect({ status: refused.status, body }).toMatchObject({ status: 429, body: { error: 'budget_exhausted', budget: { scope: 'project', id: 'zeta' } } });
      expect(llm.chatRequests).toHaveLength(asked);
      expect(JSON.stringify(await runsOf())).toBe(before);
      // with room for it, the same fork runs and its usage counts against the budget
      expect((await api(t.url, '/api/admin/projects/zeta/budget', { method: 'PUT', body: { period: 'day', tokens: 5000 } })).status).toBe(200);
      llm.enqueue(respond.turn([{ text: 'Forked answer.' }, { finish: 'stop', usage }]));
      const ran = await fork();
      expect(ran.status).toBe(200);
      const forked = await ran.text();
      expect(forked).toContain('Forked answer.');
      // the fork's usage is its own call's: the parent's calls before the checkpoint stay the parent's
      const forkRun = await api<{ usage: { llmCalls: number; totalTokens: number } }>(t.url, `/api/chat/runs/${requestIdOf(forked)}`);
      expect(forkRun.body.usage).toMatchObject({ llmCalls: 1, totalTokens: 400 });
      const budget = await api<{ spent: { tokens: number } }>(t.url, '/api/admin/projects/zeta/budget');
      expect(budget.body.spent.tokens).toBeGreaterThan(800);
    });

    it('a key budget refuses the key on every project; on /v1/chat/completions the refusal is in OpenAI\'s shape and not retried', async () => {
      // an API_KEYS key's id: env: and the first 4 bytes of its SHA-256
      const id = `env:${createHash('sha256').update(KEY).digest().subarray(0, 4).toString('hex')}`;
      expect((await api(t.url, `/api/admin/keys/${encodeURIComponent(id)}/budget`, { method: 'PUT', body: { period: 'month', tokens: RESERVE - 1 } })).status).toBe(200);
      try {
        const res = await fetch(`${t.url}/v1/chat/completions`, { method: 'POST', headers: { ...auth, 'x-orion-project': 'gamma' }, body: JSON.stringify({ model: 'orion-unified', messages: [{ role: 'user', content: 'hi' }] }) });
        expect(res.status).toBe(429);
        // no turn fits until the limit or the turn's budget changes: waiting would not help, so no Retry-After
        expect(res.headers.get('retry-after')).toBeNull();
        expect(res.headers.get('x-should-retry')).toBe('false');
        const body = (await res.json()) as { error: { type: string; code: string; message: string } };
        expect(body.error).toMatchObject({ type: 'rate_limit_error', code: 'budget_exhausted' });
        expect(body.error.message).toContain(`key ${id}`);
        // a limit below one reservation: the refusal says no turn fits, not that the budget is spent
        expect(body.error.message).toContain('no turn fits');
        expect(llm.chatRequests).toHaveLength(0);
      } finally {
        expect((await api(t.url, `/api/admin/keys/${encodeURIComponent(id)}/budget`, { method: 'DELETE' })).status).toBe(204);
      }
      // without the budget the same send runs
      llm.enqueue(respond.turn([{ text: 'hello' }, { finish: 'stop', usage }]));
      const res = await fetch(`${t.url}/v1/chat/completions`, { method: 'POST', headers: { ...auth, 'x-orion-project': 'gamma' }, body: JSON.stringify({ model: 'orion-unified', messages: [{ role: 'user', content: 'hi' }] }) });
      expect(res.status).toBe(200);
      const report = await api<{ groups: Array<{ group: string; turns: number }> }>(t.url, '/api/admin/projects/gamma/usage?groupBy=key');
      expect(report.body.groups).toEqual([expect.objectContaining({ group: id, turns: 1 })]);
    });
  });

  describeOnPostgres('two instances share one database only on a PostgreSQL server', 'across two instances on one PostgreSQL', () => {
    let a: TestApp;
    let b: TestApp;
    afterAll(async () => {
      await b?.close();
      await a?.close();
    });

    it('20 concurrent sends over two instances against a budget of 5 turns: 5 run, 15 get 429 before any model call; the report is the sum of the runs', async () => {
      a = await startApp({ ...env, LLM_BASE_URL: llm.openAiBaseUrl });
      b = await startApp({ ...env, LLM_BASE_URL: llm.openAiBaseUrl }, { databaseUrl: a.databaseUrl });
      await twentyAgainstFive(llm, [a.url, b.url], 'delta');
    }, 60_000);
  });
});
