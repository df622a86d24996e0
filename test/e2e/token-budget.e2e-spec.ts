import OpenAI from 'openai';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startApp, type TestApp } from '../support/app';
import { ReplayServer, respond } from '../support/replay-server';
import type { ScriptStep } from '../support/llm-wire';
import { parsePrometheusText, seriesKey } from '../support/prometheus-text';
import { checkEnvelope, sse, type SseEvent } from '../support/sse-client';

const BUDGET = 20_000;
const LARGE_LINES = 1200;
const PRICES = { 'scripted-model': { input: 2.5, output: 10, cached: 1.25 } };

/** Issue #46: a turn token budget ends the turn with a real answer; the turn's cost comes from LLM_PRICES. */
describe.each([
  ['unified', '/api/chat/messages', 'orion-unified'],
  ['two-stage', '/api/chat/messages_two_stage', 'orion-two-stage'],
])('turn token budget on the %s route', (_protocol, route, v1Model) => {
  let llm: ReplayServer;
  let t: TestApp;

  beforeAll(async () => {
    llm = await ReplayServer.start();
    t = await startApp({ LLM_PROVIDER: 'openai', LLM_BASE_URL: llm.openAiBaseUrl, LLM_MODEL: 'scripted-model', TWO_STAGE_ENABLED: 'true', TURN_TOKEN_BUDGET: String(BUDGET), LLM_PRICES: JSON.stringify(PRICES) });
    const project = join(t.workspace, 'default');
    mkdirSync(join(project, 'guides'), { recursive: true });
    for (let i = 0; i < 10; i++) writeFileSync(join(project, 'guides', `note-${i}.md`), `Note ${i}.\n`);
    for (let i = 0; i < 12; i++) writeFileSync(join(project, 'guides', `mid-${i}.md`), Array.from({ length: 60 }, (_, k) => `Mid ${i} line ${k}: the value is ${(k * 17 + i) % 101}.`).join('\n'));
    // about 16,000 tokens: larger than the small budget below on its own
    writeFileSync(join(project, 'guides', 'large.md'), Array.from({ length: LARGE_LINES }, (_, i) => `Line ${i}: the ${i % 7 === 0 ? 'amber' : 'slate'} lantern ${i * 31 % 997} hangs by door ${i % 13}.`).join('\n'));
  });
  afterAll(async () => {
    await t?.close();
    await llm?.close();
  });
  beforeEach(() => llm.reset());

  const send = (content: string, extra: Record<string, unknown> = {}) => sse(`${t.url}${route}`, { body: { content, ...extra }, timeoutMs: 30_000 });
  const of = (events: SseEvent[], type: string) => events.filter((e) => e.event === type);
  const textOf = (events: SseEvent[]) => of(events, 'chunk').map((e) => e.data.content).join('');

  it('a model that keeps calling tools gets a tool-free final call capped by what is left; stopReason token_budget; the stored usage stays inside the budget', async () => {
    // a new file each call (never a loop strike); the tool-free call answers. Each call with
    // tools reports 3000 prompt + 4000 completion tokens: the budget holds two of them
    let n = 0;
    const toolUsage = { promptTokens: 3000, completionTokens: 4000 };
    llm.setFallback(respond.byRequest((req) =>
      (req.body?.tools ?? []).length > 0
        ? respond.turn([{ toolCall: { name: 'read_file', args: { path: `guides/note-${n++}.md` } } }, { finish: 'tool_calls', usage: toolUsage }])
        : respond.turn([{ text: 'The notes are numbered 0 to 9.' }, { finish: 'stop', usage: { promptTokens: 3100, completionTokens: 40 } }])));
    const res = await send('Read every note');
    checkEnvelope(res.events);
    const done = of(res.events, 'done')[0].data as { stopReason: string; usage: Record<string, number>; messageId: string };
    expect(done.stopReason).toBe('token_budget');
    expect(textOf(res.events)).toContain('The notes are numbered 0 to 9.');
    expect(llm.chatRequests).toHaveLength(3);
    const capOf = (i: number) => Number(llm.chatRequests[i].body.max_tokens ?? llm.chatRequests[i].body.max_completion_tokens);
    // every call that could call a tool went out with a worst case (what was used + its prompt + its max_tokens) inside the budget
    expect((llm.chatRequests[0].body.tools ?? []).length).toBeGreaterThan(0);
    expect(3000 + capOf(0)).toBeLessThanOrEqual(BUDGET);
    expect((llm.chatRequests[1].body.tools ?? []).length).toBeGreaterThan(0);
    expect(7000 + 3000 + capOf(1)).toBeLessThanOrEqual(BUDGET);
    // the final call has no tools and what the budget leaves after its prompt (as measured before sending)
    const final = llm.chatRequests[2].body;
    expect(final.tools ?? []).toEqual([]);
    expect(capOf(2)).toBeLessThan(BUDGET - 14_000 - 2000);
    expect(capOf(2)).toBeGreaterThan(1000);
    expect(done.usage).toMatchObject({ promptTokens: 9100, completionTokens: 8040, totalTokens: 17_140, llmCalls: 3 });
    expect(done.usage.totalTokens).toBeLessThanOrEqual(BUDGET);

    const run = (await (await fetch(`${t.url}/api/chat/runs/${res.events[0].data.requestId}`)).json()) as { stopReason: string; usage: Record<string, number> };
    expect(run.stopReason).toBe('token_budget');
    expect(run.usage).toEqual(done.usage);
    // (9100 × 2.5 + 8040 × 10) / 1e6
    expect(run.usage.cost).toBeCloseTo(0.103150, 10);
  });

  it('a tool output larger than what the budget leaves: the next call is the final one, its prompt cut to fit (the block still closed), and the turn stays inside the budget plus that call\'s max_tokens', async () => {
    // a provider that reports no usage: every figure is the tokenizer's, as the budget counts it
    const small = 12_000;
    llm.setFallback(respond.byRequest((req) =>
      (req.body?.tools ?? []).length > 0
        ? respond.turn([{ toolCall: { name: 'read_file', args: { path: 'guides/large.md' } } }, { finish: 'tool_calls', usage: null }])
        : respond.turn([{ text: 'The large guide lists numbered lines.' }, { finish: 'stop', usage: null }])));
    const res = await send('Read the large guide', { options: { turnTokenBudget: small } });
    checkEnvelope(res.events);
    const done = of(res.events, 'done')[0].data as { stopReason: string; usage: Record<string, number | boolean> };
    expect(done.stopReason).toBe('token_budget');
    expect(textOf(res.events)).toContain('The large guide lists numbered lines.');
    expect(llm.chatRequests).toHaveLength(2);
    const final = llm.chatRequests[1].body;
    expect(final.tools ?? []).toEqual([]);
    const sent = JSON.stringify(final.messages);
    // the tool output was cut from its end, said so, and its untrusted block still closes
    expect(sent).toContain("were cut to fit the turn's token budget");
    expect(sent).toContain('Line 1: ');
    expect(sent).toContain('<<<END_UNTRUSTED_TOOL_OUTPUT>>>');
    expect(sent).not.toContain(`Line ${LARGE_LINES - 1}: `);
    expect(done.usage.estimated).toBe(true);
    expect(done.usage.totalTokens as number).toBeLessThanOrEqual(small + Number(final.max_tokens ?? final.max_completion_tokens));
    expect(done.usage.promptTokens as number).toBeLessThan(small);
  });

  it('a step of many calls, or a long text before its call: the final call still fits, usage inside the budget plus its max_tokens', async () => {
    // twelve calls in one response (a unified step runs them all); then a model that writes as
    // much text as its max_tokens allows before one call (its text joins the final call's prompt)
    const many = Array.from({ length: 12 }, (_, i) => ({ toolCall: { name: 'read_file', args: { path: `guides/mid-${i}.md` } } }));
    const talk = (maxTokens: number) => Array.from({ length: Math.max(1, Math.floor((maxTokens - 60) / 7)) }, (_, i) => `point ${i} of the plan,`).join(' ');
    const cases: Array<[string, (maxTokens: number) => ScriptStep[], number]> = [
      ['many calls', () => [...many, { finish: 'tool_calls', usage: null }], 3000],
      ['long text', (maxTokens) => [{ text: talk(maxTokens) }, { toolCall: { name: 'read_file', args: { path: 'guides/mid-0.md' } } }, { finish: 'tool_calls', usage: null }], 8000],
    ];
    for (const [name, step, budget] of cases) {
      llm.reset();
      llm.setFallback(respond.byRequest((req) =>
        (req.body?.tools ?? []).length > 0 ? respond.turn(step(Number(req.body.max_tokens ?? req.body.max_completion_tokens))) : respond.turn([{ text: 'Here is what the files say.' }, { finish: 'stop', usage: null }])));
      const res = await send(`Read the files (${name})`, { options: { turnTokenBudget: budget } });
      checkEnvelope(res.events);
      const done = of(res.events, 'done')[0].data as { stopReason: string; usage: { totalTokens: number } };
      const last = llm.chatRequests.at(-1)!.body;
      const cap = Number(last.max_tokens ?? last.max_completion_tokens);
      // and the answer is the model's, written from the tool results (the budget left room for it)
      expect({ name, stopReason: done.stopReason, withinBudget: done.usage.totalTokens <= budget + cap, answered: textOf(res.events).includes('Here is what the files say.') }).toEqual({
        name,
        stopReason: 'token_budget',
        withinBudget: true,
        answered: true,
      });
    }
  });

  it('a turn budget smaller than the turn\'s own prompt: no model call at all, a notice saying so, stopReason token_budget, nothing spent', async () => {
    const res = await send('Read every note', { options: { turnTokenBudget: 100 } });
    checkEnvelope(res.events);
    const done = of(res.events, 'done')[0].data as { stopReason: string; usage: { totalTokens: number } };
    expect(done.stopReason).toBe('token_budget');
    expect(llm.chatRequests).toHaveLength(0);
    expect(textOf(res.events)).toContain('No answer was written');
    expect(textOf(res.events)).toContain('turnTokenBudget');
    expect(done.usage.totalTokens).toBe(0);
  });

  it('the cost of a recorded turn is the hand-computed figure from LLM_PRICES, cached prompt tokens at their own price', async () => {
    llm.enqueue(respond.turn([{ text: 'Hello.' }, { finish: 'stop', usage: { promptTokens: 1200, completionTokens: 300, cachedTokens: 400, reasoningTokens: 100 } }]));
    const res = await send('Say hello', { options: { turnTokenBudget: 100_000 } });
    const done = of(res.events, 'done')[0].data as { stopReason: string; usage: Record<string, number> };
    expect(done.stopReason).toBe('final_answer');
    // (800 × 2.5 + 400 × 1.25 + 300 × 10) / 1e6 = (2000 + 500 + 3000) / 1e6
    expect(done.usage.cost).toBeCloseTo(0.0055, 10);
    expect(done.usage).toMatchObject({ promptTokens: 1200, completionTokens: 300, cachedTokens: 400, reasoningTokens: 100 });
    // the project's spend is on /metrics too: the counters grow by exactly this turn's tokens and cost
    const before = parsePrometheusText(await (await fetch(`${t.url}/metrics`)).text());
    llm.enqueue(respond.turn([{ text: 'Hello again.' }, { finish: 'stop', usage: { promptTokens: 1200, completionTokens: 300, cachedTokens: 400 } }]));
    await send('Say hello again');
    const after = parsePrometheusText(await (await fetch(`${t.url}/metrics`)).text());
    const key = (name: string) => seriesKey(name, { project: 'default' });
    expect((after.get(key('orion_project_tokens_total')) ?? 0) - (before.get(key('orion_project_tokens_total')) ?? 0)).toBe(1500);
    expect((after.get(key('orion_project_cost_total')) ?? 0) - (before.get(key('orion_project_cost_total')) ?? 0)).toBeCloseTo(0.0055, 10);
  });

  it('on /v1 the OpenAI client reads the cached and reasoning details and Orion\'s cost in usage', async () => {
    llm.enqueue(respond.turn([{ text: 'Hello.' }, { finish: 'stop', usage: { promptTokens: 1200, completionTokens: 300, cachedTokens: 400, reasoningTokens: 100 } }]));
    const openai = new OpenAI({ baseURL: `${t.url}/v1`, apiKey: 'unused-in-local-mode', maxRetries: 0 });
    const c = await openai.chat.completions.create({ model: v1Model, messages: [{ role: 'user', content: 'Say hello' }] });
    expect(c.usage).toMatchObject({ prompt_tokens: 1200, completion_tokens: 300, total_tokens: 1500, prompt_tokens_details: { cached_tokens: 400 }, completion_tokens_details: { reasoning_tokens: 100 } });
    expect((c.usage as unknown as { orion_cost: number }).orion_cost).toBeCloseTo(0.0055, 10);
  });

  it('a provider that reports no usage gets a tokenizer estimate, marked estimated, and still a cost', async () => {
    llm.enqueue(respond.turn([{ text: 'An answer of a few words.' }, { finish: 'stop', usage: null }]));
    const res = await send('Answer without usage');
    const done = of(res.events, 'done')[0].data as { usage: Record<string, unknown> };
    expect(done.usage.estimated).toBe(true);
    expect(done.usage.completionTokens).toBe(7);
    expect(done.usage.promptTokens as number).toBeGreaterThan(20);
    const u = done.usage as { promptTokens: number; completionTokens: number; cost: number };
    expect(u.cost).toBeCloseTo(Math.round(u.promptTokens * 2.5 + u.completionTokens * 10) / 1e6, 10);
  });

  it('refuses a per-request budget outside its bounds with a 400 naming the field', async () => {
    const r = await fetch(`${t.url}${route}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ content: 'hi', options: { turnTokenBudget: 5 } }) });
    expect(r.status).toBe(400);
    expect(JSON.stringify(await r.json())).toContain('turnTokenBudget');
    expect(llm.chatRequests).toHaveLength(0);
  });
});
