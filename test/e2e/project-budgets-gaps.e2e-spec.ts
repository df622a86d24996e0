import { startApp, type TestApp } from '../support/app';
import { ReplayServer, respond } from '../support/replay-server';
import { sse } from '../support/sse-client';
import { waitFor } from '../support/wait-for';

const KEY = 'budget-gaps-admin-key';
const auth = { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' };
const PRICES = { 'scripted-model': { input: 2, output: 8 } };

const api = async <T>(url: string, path: string, init: { method?: string; body?: unknown } = {}): Promise<{ status: number; body: T }> => {
  const res = await fetch(`${url}${path}`, { method: init.method ?? 'GET', headers: auth, ...(init.body !== undefined && { body: JSON.stringify(init.body) }) });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : null) as T };
};

interface Usage {
  totalTokens: number;
  promptTokens: number;
  completionTokens: number;
  llmCalls: number;
  estimated?: boolean;
  cost?: number;
}
interface Report {
  totals: { tokens: number; cost: number; turns: number };
}

/**
 * Issue 46, the audit's gaps: a cancelled turn counts what its cut model call used (estimated),
 * the usage report's turns are the turns that called a model, a budget that is not set is a coded
 * 404, and a cost budget that no price could ever fill is refused when it is set.
 */
describe('project budgets: what a cancel spends, what a turn is, coded refusals (issue 46)', () => {
  let llm: ReplayServer;
  beforeAll(async () => {
    llm = await ReplayServer.start();
  });
  afterAll(async () => {
    await llm.close();
  });
  beforeEach(() => llm.reset());
  const env = { API_KEYS: KEY, LLM_PROVIDER: 'openai', LLM_MODEL: 'scripted-model', RATE_LIMIT_PER_MINUTE: '0', BUDGET_TURN_RESERVE_TOKENS: '2000' };

  describe('with LLM_PRICES', () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await startApp({ ...env, LLM_BASE_URL: llm.openAiBaseUrl, LLM_PRICES: JSON.stringify(PRICES) });
    });
    afterAll(async () => {
      await t?.close();
    });

    it('a turn cancelled mid-answer counts its cut call, estimated with the tokenizer, against the budget and in the report', async () => {
      expect((await api(t.url, '/api/admin/projects/cancelled/budget', { method: 'PUT', body: { period: 'month', tokens: 100_000, cost: 10 } })).status).toBe(200);
      // the model streams slowly and never gets to report its usage
      llm.enqueue(respond.turn([{ text: 'one two three four ' }, { text: 'five six ' }, { text: 'seven ' }, { text: 'eight' }, { finish: 'stop' }], { faults: { delayMs: 300 } }));
      let cancel: Promise<Response> | undefined;
      const res = await sse(`${t.url}/api/chat/messages`, {
        headers: { authorization: `Bearer ${KEY}` },
        body: { content: 'count to eight', projectId: 'cancelled' },
        onEvent: (e) => {
          if (e.event === 'chunk' && !cancel) cancel = fetch(`${t.url}/api/chat/runs/${e.data.requestId}/cancel`, { method: 'POST', headers: auth, body: '{}' });
        },
      });
      expect((await cancel!).status).toBe(202);
      const done = res.events.at(-1)!;
      expect(done.data.stopReason).toBe('cancelled');
      const usage = done.data.usage as Usage;
      expect(usage).toMatchObject({ llmCalls: 1, estimated: true });
      expect(usage.promptTokens).toBeGreaterThan(0);
      expect(usage.completionTokens).toBeGreaterThan(0);
      expect(usage.cost).toBeGreaterThan(0);
      const run = await api<{ usage: Usage; status: string }>(t.url, `/api/chat/runs/${done.data.requestId as string}`);
      expect(run.body).toMatchObject({ status: 'cancelled', usage: { totalTokens: usage.totalTokens, estimated: true } });
      // the budget counts what the run stored, not 0 and not the reservation of 2000
      const budget = await api<{ spent: { tokens: number; cost: number } }>(t.url, '/api/admin/projects/cancelled/budget');
      expect(budget.body.spent.tokens).toBe(usage.totalTokens);
      expect(budget.body.spent.cost).toBeCloseTo(usage.cost!, 6);
      const report = await api<Report>(t.url, '/api/admin/projects/cancelled/usage');
      expect(report.body.totals).toMatchObject({ tokens: usage.totalTokens, turns: 1 });
    }, 30_000);

    it("the usage report's turns are the ended runs that called a model: a command's run is not a turn", async () => {
      llm.enqueue(respond.turn([{ text: 'hello' }, { finish: 'stop', usage: { promptTokens: 30, completionTokens: 10 } }]));
      const answered = await sse(`${t.url}/api/chat/messages`, { headers: { authorization: `Bearer ${KEY}` }, body: { content: 'hi', projectId: 'turns' } });
      expect(answered.events.at(-1)!.data.stopReason).toBe('final_answer');
      // a command answers without calling a model (and is never admitted against a budget)
      const command = await sse(`${t.url}/api/chat/messages`, { headers: { authorization: `Bearer ${KEY}` }, body: { content: '/help', projectId: 'turns' } });
      expect(command.events.at(-1)!.event).toBe('done');
      expect(llm.chatRequests).toHaveLength(1);
      // its run ended with a stored usage of no call: a run the report's sum covers, but no turn
      const commandRun = await api<{ status: string; usage: Usage }>(t.url, `/api/chat/runs/${command.events.at(-1)!.data.requestId as string}`);
      expect(commandRun.body).toMatchObject({ status: 'completed', usage: { llmCalls: 0, totalTokens: 0 } });
      const report = await waitFor(async () => {
        const r = await api<Report>(t.url, '/api/admin/projects/turns/usage');
        return r.body.totals.tokens === 40 ? r.body : undefined;
      }, { what: 'the answered run in the report' });
      expect(report.totals).toEqual({ tokens: 40, cost: expect.closeTo((30 * 2 + 10 * 8) / 1e6, 9), turns: 1 });
    });

    it('a budget that is not set is 404 budget_not_found on GET and DELETE, for projects and keys', async () => {
      for (const path of ['/api/admin/projects/unbudgeted/budget', '/api/admin/keys/no-such-key/budget']) {
        for (const method of ['GET', 'DELETE']) {
          const res = await api<{ error: string; message: string; statusCode: number }>(t.url, path, { method });
          expect(res.status).toBe(404);
          expect(res.body.error).toBe('budget_not_found');
          expect(res.body.message).toMatch(/^No budget is set for (project unbudgeted|key no-such-key)$/);
        }
      }
    });

    it('a cost budget is accepted when a configured model has a price', async () => {
      expect((await api(t.url, '/api/admin/projects/priced/budget', { method: 'PUT', body: { period: 'day', cost: 1 } })).status).toBe(200);
    });
  });

  describe('without LLM_PRICES', () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await startApp({ ...env, LLM_BASE_URL: llm.openAiBaseUrl });
    });
    afterAll(async () => {
      await t?.close();
    });

    it('a cost budget is refused with 400 budget_cost_unpriced (it could never bind) and nothing is stored; a tokens budget is set', async () => {
      for (const body of [{ period: 'month', cost: 5 }, { period: 'month', tokens: 1000, cost: 5 }]) {
        const res = await api<{ error: string; message: string; models: string[] }>(t.url, '/api/admin/projects/unpriced/budget', { method: 'PUT', body });
        expect(res.status).toBe(400);
        expect(res.body).toMatchObject({ error: 'budget_cost_unpriced', models: ['scripted-model'] });
        expect(res.body.message).toContain('LLM_PRICES');
        expect((await api(t.url, '/api/admin/projects/unpriced/budget')).status).toBe(404);
      }
      expect((await api(t.url, '/api/admin/projects/unpriced/budget', { method: 'PUT', body: { period: 'month', tokens: 1000 } })).status).toBe(200);
      // nor can an existing budget gain a cost limit
      expect((await api(t.url, '/api/admin/projects/unpriced/budget', { method: 'PUT', body: { period: 'month', tokens: 1000, cost: 5 } })).status).toBe(400);
      expect((await api<{ cost: number | null }>(t.url, '/api/admin/projects/unpriced/budget')).body.cost).toBeNull();
    });
  });
});
