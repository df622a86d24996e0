import { startApp, type TestApp } from '../support/app';
import { mappedRoutes } from '../../src/common/auth/route-inventory';

const SOME_UUID = '00000000-0000-4000-8000-000000000000';

/** Default-deny: every route the controllers map needs a key unless it is marked @Public(). */
describe('default-deny routes', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startApp({ API_KEYS: 'the-key' });
  });
  afterAll(async () => {
    await t.close();
  });

  const call = (method: string, path: string, headers: Record<string, string> = {}) =>
    fetch(`${t.url}${path.replace(/:[A-Za-z0-9_]+/g, SOME_UUID)}`, {
      method,
      headers: { 'content-type': 'application/json', ...headers },
      body: method === 'GET' || method === 'DELETE' ? undefined : '{}',
    });

  it('finds the routes (the enumeration itself is not empty)', () => {
    const routes = mappedRoutes(t.app);
    expect(routes.length).toBeGreaterThan(20);
    expect(routes.filter((r) => r.isPublic).map((r) => r.path).sort()).toEqual(
      ['/', '/.well-known/agent-card.json', '/api/health', '/api/health/live', '/api/health/ready', '/assets/:file', '/debug', '/vendor/:file'].sort(),
    );
  });

  it('answers 401 on every non-public route without a key, and with a wrong key', async () => {
    const open: string[] = [];
    for (const r of mappedRoutes(t.app).filter((x) => !x.isPublic)) {
      // a route for every method (@All: the /v1 catch-all) is tried with the usual ones
      for (const method of r.method === 'ALL' ? ['GET', 'POST', 'DELETE'] : [r.method]) {
        const res = await call(method, r.path);
        if (res.status !== 401) open.push(`${method} ${r.path} → ${res.status} without a key`);
        const wrong = await call(method, r.path, { authorization: 'Bearer not-the-key' });
        if (wrong.status !== 401) open.push(`${method} ${r.path} → ${wrong.status} with a wrong key`);
      }
    }
    expect(open).toEqual([]);
  });

  it('serves every public route without a key', async () => {
    for (const r of mappedRoutes(t.app).filter((x) => x.isPublic)) {
      expect([r.path, (await call(r.method, r.path)).status]).not.toEqual([r.path, 401]);
    }
  });

  it('takes ?access_token= only on the GET stream route, never elsewhere', async () => {
    const res = await fetch(`${t.url}/api/tools?access_token=the-key`);
    expect(res.status).toBe(401);
    expect((await res.json()).message).toMatch(/only on GET stream routes/);
    expect((await fetch(`${t.url}/api/chat/runs/${SOME_UUID}/events?access_token=the-key`)).status).not.toBe(401);
  });

  it('marks exactly the public routes as needing no key in the OpenAPI document', async () => {
    const doc = await (await fetch(`${t.url}/docs-json`)).json();
    const open = Object.entries(doc.paths as Record<string, Record<string, { security?: unknown[] }>>).flatMap(([p, item]) =>
      Object.entries(item).filter(([, op]) => Array.isArray(op.security) && op.security.length === 0).map(([m]) => `${m} ${p}`),
    );
    expect(open.sort()).toEqual(['get /api/health', 'get /api/health/live', 'get /api/health/ready']);
  });
});
