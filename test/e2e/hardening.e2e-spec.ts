import { startApp, type TestApp } from '../support/app';

/** The smaller holes of issue 14: headers, prototype keys, body size. */
describe('hardening', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startApp();
  });
  afterAll(async () => {
    await t.close();
  });

  it('sends helmet security headers and no X-Powered-By, and keeps the page CSP', async () => {
    const api = await fetch(`${t.url}/api/tools`);
    expect(api.headers.get('x-powered-by')).toBeNull();
    expect(api.headers.get('x-content-type-options')).toBe('nosniff');
    expect(api.headers.get('strict-transport-security')).toMatch(/max-age/);
    const page = await fetch(`${t.url}/`);
    expect(page.headers.get('x-powered-by')).toBeNull();
    expect(page.headers.get('content-security-policy')).toMatch(/default-src/);
  });

  it.each([
    ['{"content":"hi","constructor":{"prototype":{"polluted":true}}}', 'constructor'],
    ['{"content":"hi","__proto__":{"polluted":true}}', '__proto__'],
    ['{"content":"hi","settings":{"prototype":1}}', 'settings.prototype'],
  ])('refuses a body with a prototype key (%s) with a 400 that names it', async (body, where) => {
    const res = await fetch(`${t.url}/api/chat/messages`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    expect(res.status).toBe(400);
    expect((await res.json()).message).toContain(where);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('answers 413 to a body over the size limit', async () => {
    const res = await fetch(`${t.url}/api/chat/messages`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ content: 'x'.repeat(300_000) }) });
    expect(res.status).toBe(413);
    expect((await fetch(`${t.url}/api/health`)).status).toBe(200);
  });
});
