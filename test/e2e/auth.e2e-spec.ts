import { startApp, type TestApp } from '../support/app';
import { sse } from '../support/sse-client';
import { validateEnv } from '../../src/config/env.schema';

/** API_KEYS: every /api route but /api/health needs a key, however the path is spelled. */
describe('API keys', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startApp({ API_KEYS: 'key-one, key-two' });
  });
  afterAll(async () => {
    await t.close();
  });

  it.each([
    ['GET', '/api/chat/conversations'],
    ['GET', '/API/chat/conversations'],
    ['GET', '/Api/Trace'],
    ['GET', '/api/tools/'],
    ['GET', '/API/config/capabilities'],
    ['POST', '/API/chat/messages'],
    ['POST', '/api/orchestration/execute'],
    ['GET', '/api/knowledge/modules'],
  ])('%s %s without a key is 401', async (method, path) => {
    const res = await fetch(`${t.url}${path}`, { method, headers: { 'content-type': 'application/json' }, body: method === 'POST' ? JSON.stringify({ content: 'x' }) : undefined });
    expect(res.status).toBe(401);
    expect((await res.json()).message).toMatch(/Authorization: Bearer/);
  });

  it('does not serve an API route under a doubled slash without a key', async () => {
    const res = await fetch(`${t.url}//api//tools`);
    expect([401, 404]).toContain(res.status);
  });

  it('accepts either key, refuses a wrong one, keeps health, the page and the docs public', async () => {
    expect((await fetch(`${t.url}/api/tools`, { headers: { authorization: 'Bearer key-two' } })).status).toBe(200);
    expect((await fetch(`${t.url}/API/tools`, { headers: { authorization: 'Bearer key-one' } })).status).toBe(200);
    expect((await fetch(`${t.url}/api/tools`, { headers: { authorization: 'Bearer key-three' } })).status).toBe(401);
    expect((await fetch(`${t.url}/api/health`)).status).toBe(200);
    expect((await fetch(`${t.url}/`)).status).toBe(200);
    expect((await fetch(`${t.url}/docs-json`)).status).toBe(200);
  });

  it('lets an EventSource client authenticate with ?access_token=', async () => {
    const res = await sse(`${t.url}/api/chat/messages`, { body: { content: 'hi' }, headers: { authorization: 'Bearer key-one' } });
    const requestId = res.events[0].data.requestId as string;
    expect((await fetch(`${t.url}/api/chat/runs/${requestId}/events`)).status).toBe(401);
    const replay = await sse(`${t.url}/api/chat/runs/${requestId}/events?access_token=key-one`);
    expect(replay.events.at(-1)!.event).toBe('done');
  });

  it('refuses an API_KEYS that holds no key at start-up', () => {
    expect(() => validateEnv({ API_KEYS: ' , ' })).toThrow(/API_KEYS=.*must hold at least one non-empty key/);
  });
});
