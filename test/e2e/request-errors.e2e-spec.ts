import { startApp, type TestApp } from '../support/app';
import { ReplayServer, respond } from '../support/replay-server';
import { sse } from '../support/sse-client';

/**
 * Issue #30: errors that say what to fix. A body that is not JSON names the header, a body over
 * the limit names the setting, a caller without a valid key learns that first whatever its body
 * is, and a tool that cannot run says why wherever it shows.
 */
const KEY = 'request-errors-admin-key';
const OVERSIZED = JSON.stringify({ content: 'x'.repeat(300_000) });

const post = (url: string, body: string, headers: Record<string, string> = {}) => fetch(url, { method: 'POST', headers, body });
const answer = async (res: Response) => ({ status: res.status, body: await res.json() });

describe('request errors that say what to fix', () => {
  let llm: ReplayServer;
  let local: TestApp;
  let keyed: TestApp;

  beforeAll(async () => {
    llm = await ReplayServer.start();
    // no SEARXNG_URL: web_search is registered but cannot run
    local = await startApp({ LLM_PROVIDER: 'openai', LLM_BASE_URL: llm.openAiBaseUrl, LLM_MODEL: 'scripted-model' });
    keyed = await startApp({ API_KEYS: KEY, MAX_BODY_BYTES: '4096' });
  }, 60_000);
  afterAll(async () => {
    await local?.close();
    await keyed?.close();
    await llm?.close();
  });
  beforeEach(() => llm.reset());

  const conversations = async (t: TestApp) => (await (await fetch(`${t.url}/api/chat/conversations`, { headers: { authorization: `Bearer ${KEY}` } })).json()) as unknown[];

  describe('a body that is not JSON', () => {
    it.each([
      ['a form body (curl -d)', { 'content-type': 'application/x-www-form-urlencoded' }, 'got "application/x-www-form-urlencoded"'],
      ['a text body', { 'content-type': 'text/plain;charset=UTF-8' }, 'got "text/plain;charset=UTF-8"'],
    ])('is a 415 naming the Content-Type header for %s, and nothing is stored', async (_name, headers, got) => {
      const res = await answer(await post(`${local.url}/api/chat/messages`, '{"content":"hi"}', headers));
      expect(res.status).toBe(415);
      expect(res.body).toMatchObject({ statusCode: 415, error: 'Unsupported Media Type' });
      expect(res.body.message).toContain('Content-Type: application/json');
      expect(res.body.message).toContain(got);
      expect(await conversations(local)).toEqual([]);
      expect(llm.chatRequests).toHaveLength(0);
    });

    it('echoes a very long Content-Type cut to 100 characters', async () => {
      const type = `text/plain; x=${'y'.repeat(6000)}`;
      const res = await answer(await post(`${local.url}/api/chat/messages`, '{"content":"hi"}', { 'content-type': type }));
      expect(res.status).toBe(415);
      expect(res.body.message).toContain(`got "${type.slice(0, 100)}…"`);
      expect(res.body.message.length).toBeLessThan(300);
    });

    it('is a 415 when no Content-Type is sent at all', async () => {
      // undici adds text/plain to a string body; a Uint8Array goes without any Content-Type
      const res = await answer(await fetch(`${local.url}/api/chat/messages`, { method: 'POST', body: new TextEncoder().encode('{"content":"hi"}') }));
      expect(res.status).toBe(415);
      expect(res.body.message).toContain('no Content-Type header was sent');
    });

    it('does not refuse a POST without a body (cancel, pause)', async () => {
      const res = await fetch(`${local.url}/api/chat/runs/00000000-0000-4000-8000-000000000000/cancel`, { method: 'POST' });
      expect(res.status).toBe(404);
      expect((await res.json()).error).toBe('run_not_found');
    });
  });

  it('a body over the limit is a 413 that names MAX_BODY_BYTES and its value, and nothing is stored', async () => {
    const res = await answer(await post(`${local.url}/api/chat/messages`, OVERSIZED, { 'content-type': 'application/json' }));
    expect(res.status).toBe(413);
    expect(res.body).toMatchObject({ statusCode: 413, error: 'Payload Too Large', limit: 'MAX_BODY_BYTES', max: 262_144 });
    expect(res.body.message).toContain('MAX_BODY_BYTES=262144');
    expect(await conversations(local)).toEqual([]);
    // the limit is the setting's value, not a fixed one
    const small = await answer(await post(`${keyed.url}/api/chat/messages`, JSON.stringify({ content: 'x'.repeat(5000) }), { 'content-type': 'application/json', authorization: `Bearer ${KEY}` }));
    expect(small.status).toBe(413);
    expect(small.body).toMatchObject({ limit: 'MAX_BODY_BYTES', max: 4096 });
    expect(small.body.message).toContain('MAX_BODY_BYTES=4096');
  });

  describe('the key is checked before the body', () => {
    const cases: Array<[string, string, Record<string, string>]> = [
      ['an oversized body', OVERSIZED, { 'content-type': 'application/json' }],
      ['malformed JSON', '{"content": ', { 'content-type': 'application/json' }],
      ['a body that is not JSON', 'content=hi', { 'content-type': 'application/x-www-form-urlencoded' }],
      ['a body with a prototype key', '{"content":"hi","__proto__":{"x":1}}', { 'content-type': 'application/json' }],
    ];

    it.each(cases)('a caller without a key gets 401 for %s', async (_name, body, headers) => {
      const res = await answer(await post(`${keyed.url}/api/chat/messages`, body, headers));
      expect([res.status, res.body.error]).toEqual([401, 'Unauthorized']);
      expect(res.body.message).toContain('Authorization: Bearer');
    });

    it.each(cases)('a caller with a wrong key gets 401 for %s', async (_name, body, headers) => {
      const res = await post(`${keyed.url}/api/chat/messages`, body, { ...headers, authorization: 'Bearer not-a-key' });
      expect(res.status).toBe(401);
    });

    it.each([
      [cases[0][0], 413],
      [cases[1][0], 400],
      [cases[2][0], 415],
      [cases[3][0], 400],
    ] as const)('a caller with a valid key gets the body error for %s (%d)', async (name, status) => {
      const [, body, headers] = cases.find(([n]) => n === name)!;
      const res = await post(`${keyed.url}/api/chat/messages`, body, { ...headers, authorization: `Bearer ${KEY}` });
      expect(res.status).toBe(status);
      expect(await conversations(keyed)).toEqual([]);
    });
  });

  describe('a tool that cannot run says why', () => {
    const REASON = /not configured: no SearXNG instance \(set SEARXNG_URL\)/;

    it('GET /api/tools lists web_search as unavailable with the reason', async () => {
      const tools = (await (await fetch(`${local.url}/api/tools`)).json()) as Array<{ name: string; available: boolean; unavailable?: string }>;
      const search = tools.find((t) => t.name === 'web_search')!;
      expect(search.available).toBe(false);
      expect(search.unavailable).toMatch(REASON);
      // every unavailable tool carries a reason
      for (const t of tools.filter((x) => !x.available)) expect([t.name, typeof t.unavailable]).toEqual([t.name, 'string']);
    });

    it('the /search command answers with the reason', async () => {
      const res = await sse(`${local.url}/api/chat/messages`, { body: { content: '/search orion' } });
      const text = res.events.filter((e) => e.event === 'chunk').map((e) => e.data.content).join('');
      expect(text).toMatch(REASON);
      expect(llm.chatRequests).toHaveLength(0);
    });

    it('a model that calls web_search is told the reason in the tool result', async () => {
      llm.enqueue(respond.turn([{ toolCall: { name: 'web_search', args: { query: 'orion' } } }]), respond.turn([{ text: 'I cannot search the web here.' }]));
      const res = await sse(`${local.url}/api/chat/messages`, { body: { content: 'search the web for orion' } });
      expect(res.events.at(-1)!.event).toBe('done');
      const second = llm.chatRequests[1]?.body as { messages: Array<{ role: string; content: string }> } | undefined;
      const toolMessages = (second?.messages ?? []).filter((m) => m.role === 'tool').map((m) => m.content).join('\n');
      expect(toolMessages).toMatch(REASON);
    });
  });
});
