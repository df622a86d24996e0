import { request as httpRequest } from 'node:http';
import { startApp, type TestApp } from '../support/app';
import { sse } from '../support/sse-client';

const ROOT = 'root-admin-key';

/**
 * Two projects, two keys: every route tried with the other project's key answers 404 (or 403/400
 * where it would read every project) and changes nothing.
 */
describe('keys bound to projects', () => {
  let t: TestApp;
  let keyA: string;
  let keyB: string;
  let keyAId: string;
  let runA: string;
  let convA: string;

  const req = (key: string, method: string, path: string, body?: unknown) =>
    fetch(`${t.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  const createKey = async (body: unknown, key = ROOT) => req(key, 'POST', '/api/admin/keys', body);
  /** Any method with a JSON body, GET included (fetch refuses a GET body; a client need not). */
  const raw = (key: string, method: string, path: string, body: unknown) =>
    new Promise<number>((resolve, reject) => {
      const data = JSON.stringify(body);
      const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(data)) };
      const r = httpRequest(`${t.url}${path}`, { method, headers }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      });
      r.on('error', reject);
      r.end(data);
    });

  beforeAll(async () => {
    t = await startApp({ API_KEYS: ROOT, TWO_STAGE_ENABLED: 'true' });
    const a = await createKey({ name: 'alpha app', projects: ['alpha'], role: 'user' });
    expect(a.status).toBe(201);
    const created = await a.json();
    expect(created).toEqual(expect.objectContaining({ name: 'alpha app', projects: ['alpha'], role: 'user', key: expect.stringMatching(/^orn_/) }));
    keyA = created.key;
    keyAId = created.id;
    keyB = (await (await createKey({ name: 'beta app', projects: ['beta'], role: 'user' })).json()).key;
    const turn = await sse(`${t.url}/api/chat/messages`, { body: { content: 'hi', projectId: 'alpha' }, headers: { authorization: `Bearer ${keyA}` } });
    runA = turn.events[0].data.requestId as string;
    convA = turn.events[0].data.conversationId as string;
    expect(turn.events.at(-1)!.event).toBe('done');
  }, 90_000);
  afterAll(async () => {
    await t.close();
  });

  it('lists keys without the key itself, and never stores it', async () => {
    const list = await (await req(ROOT, 'GET', '/api/admin/keys')).json();
    expect(list.map((k: { name: string }) => k.name)).toEqual(['alpha app', 'beta app']);
    expect(JSON.stringify(list)).not.toContain(keyA);
    const rows = await t.app.get((await import('typeorm')).DataSource).query('SELECT key_hash FROM api_keys');
    expect(JSON.stringify(rows)).not.toContain(keyA);
  });

  it('lets the owner read its project', async () => {
    expect((await req(keyA, 'GET', '/api/chat/conversations?projectId=alpha')).status).toBe(200);
    expect((await req(keyA, 'GET', `/api/chat/conversations/${convA}/messages`)).status).toBe(200);
    expect((await req(keyA, 'GET', `/api/chat/runs/${runA}`)).status).toBe(200);
    expect((await req(keyA, 'GET', '/api/trace?projectId=alpha')).status).toBe(200);
  });

  it.each([
    ['GET', '/api/chat/conversations?projectId=alpha', () => '/api/chat/conversations?projectId=alpha', undefined],
    ['GET', '/api/chat/conversations/<convA>/messages', () => `/api/chat/conversations/${convA}/messages`, undefined],
    ['PATCH', '/api/chat/conversations/<convA>', () => `/api/chat/conversations/${convA}`, { title: 'taken over' }],
    ['DELETE', '/api/chat/conversations/<convA>', () => `/api/chat/conversations/${convA}`, undefined],
    ['PATCH', '/api/chat/conversations/<convA>/settings', () => `/api/chat/conversations/${convA}/settings`, { orchestratorEnabled: false }],
    ['GET', '/api/chat/runs/<runA>', () => `/api/chat/runs/${runA}`, undefined],
    ['GET', '/api/chat/runs/<runA>/events', () => `/api/chat/runs/${runA}/events`, undefined],
    ['POST', '/api/chat/runs/<runA>/cancel', () => `/api/chat/runs/${runA}/cancel`, undefined],
    ['POST', '/api/chat/runs/<runA>/pause', () => `/api/chat/runs/${runA}/pause`, undefined],
    ['POST', '/api/chat/messages_two_stage/resume', () => '/api/chat/messages_two_stage/resume', () => ({ requestId: runA, resumeFromPhaseIndex: 1 })],
    ['POST', '/api/chat/runs/<runA>/fork', () => `/api/chat/runs/${runA}/fork`, { fromPhaseIndex: 1 }],
    ['POST', '/api/chat/messages', () => '/api/chat/messages', { content: 'hi', projectId: 'alpha' }],
    ['POST', '/api/chat/messages', () => '/api/chat/messages', () => ({ content: 'hi', projectId: 'beta', conversationId: convA })],
    ['POST', '/api/chat/messages', () => '/api/chat/messages', { content: 'hi' }],
    ['GET', '/api/trace?projectId=alpha', () => '/api/trace?projectId=alpha', undefined],
    ['GET', '/api/knowledge/modules?projectId=alpha', () => '/api/knowledge/modules?projectId=alpha', undefined],
    ['GET', '/api/knowledge/search?projectId=alpha&q=x', () => '/api/knowledge/search?projectId=alpha&q=x', undefined],
    ['POST', '/api/knowledge/ingest', () => '/api/knowledge/ingest', { projectId: 'alpha' }],
    ['POST', '/api/orchestration/execute', () => '/api/orchestration/execute', { userInput: 'x', projectId: 'alpha' }],
    ['GET', '/api/tools?projectId=alpha', () => '/api/tools?projectId=alpha', undefined],
    ['POST', '/api/chat/messages_two_stage', () => '/api/chat/messages_two_stage', { content: 'hi', projectId: 'alpha' }],
    ['POST', '/api/orchestration/execute/stream', () => '/api/orchestration/execute/stream', { userInput: 'x', projectId: 'alpha' }],
  ])('%s %p with the other project\'s key is a 404', async (method, _label, path, body) => {
    const res = await req(keyB, method, path(), typeof body === 'function' ? body() : body);
    expect(res.status).toBe(404);
  });

  // the project named where the handler does not read it must not stand in for the one it reads
  it.each([
    ['GET', '/api/chat/conversations?projectId=alpha', { projectId: 'beta' }],
    ['GET', '/api/trace?projectId=alpha', { projectId: 'beta' }],
    ['GET', '/api/knowledge/search?projectId=alpha&q=roadmap', { projectId: 'beta' }],
    ['GET', '/api/knowledge/modules?projectId=alpha', { projectId: 'beta' }],
    ['POST', '/api/chat/messages?projectId=beta', { content: 'hi' }],
    ['POST', '/api/chat/messages_two_stage?projectId=beta', { content: 'hi' }],
    ['POST', '/api/knowledge/ingest?projectId=beta', {}],
    ['POST', '/api/orchestration/execute?projectId=beta', { userInput: 'x' }],
    ['POST', '/api/chat/messages?projectId=alpha', { content: 'hi', projectId: 'beta' }],
  ])('%s %s with the own project named elsewhere (%j) is a 404', async (method, path, body) => {
    expect(await raw(keyB, method, path, body)).toBe(404);
  });

  it('still serves a key its own project when both places name it', async () => {
    expect(await raw(keyB, 'GET', '/api/chat/conversations?projectId=beta', { projectId: 'beta' })).toBe(200);
    const turn = await sse(`${t.url}/api/chat/messages?projectId=beta`, { body: { content: 'hi', projectId: 'beta' }, headers: { authorization: `Bearer ${keyB}` } });
    expect(turn.events.at(-1)!.event).toBe('done');
  });

  it('changes nothing: the run and the conversation are as they were', async () => {
    const run = await (await req(keyA, 'GET', `/api/chat/runs/${runA}`)).json();
    expect(run.status).toBe('completed');
    const messages = await (await req(keyA, 'GET', `/api/chat/conversations/${convA}/messages`)).json();
    expect(messages).toHaveLength(2);
    const convs = await (await req(ROOT, 'GET', '/api/chat/conversations?projectId=alpha')).json();
    expect(convs).toHaveLength(1);
  });

  it('scopes every trace query: a bound key must name its project, and sees only it', async () => {
    expect((await req(keyB, 'GET', '/api/trace')).status).toBe(400);
    const own = await (await req(keyB, 'GET', `/api/trace?projectId=beta&requestId=${runA}`)).json();
    expect(own).toEqual([]);
  });

  it('keeps admin routes and /metrics from user keys', async () => {
    expect((await createKey({ name: 'x', projects: ['*'], role: 'admin' }, keyA)).status).toBe(403);
    expect((await req(keyA, 'GET', '/api/admin/keys')).status).toBe(403);
    expect((await req(keyA, 'GET', '/metrics')).status).toBe(403);
    expect((await req(keyA, 'GET', '/api/config/capabilities')).status).toBe(200);
  });

  it('refuses an expired key and a revoked key', async () => {
    // a key cannot be made already expired (400); one that has since expired is refused
    expect((await createKey({ name: 'old', projects: ['alpha'], role: 'user', expiresAt: '2020-01-01T00:00:00Z' })).status).toBe(400);
    const expired = await (await createKey({ name: 'old', projects: ['alpha'], role: 'user', expiresAt: new Date(Date.now() + 3_600_000).toISOString() })).json();
    expect((await req(expired.key, 'GET', '/api/chat/conversations?projectId=alpha')).status).toBe(200);
    await t.app.get((await import('typeorm')).DataSource).query(`UPDATE api_keys SET expires_at = now() - interval '1 second' WHERE id = $1`, [expired.id]);
    expect((await req(expired.key, 'GET', '/api/chat/conversations?projectId=alpha')).status).toBe(401);
    expect((await req(ROOT, 'DELETE', `/api/admin/keys/${keyAId}`)).status).toBe(204);
    expect((await req(keyA, 'GET', '/api/chat/conversations?projectId=alpha')).status).toBe(401);
    expect((await req(ROOT, 'DELETE', `/api/admin/keys/${keyAId}`)).status).toBe(404);
  });

  it('refuses a malformed key request with a 400', async () => {
    expect((await createKey({ name: 'x', projects: ['../etc'], role: 'user' })).status).toBe(400);
    expect((await createKey({ name: 'x', projects: ['a'], role: 'owner' })).status).toBe(400);
    // '*' beside a project would read as a short list while it opens every project
    expect((await createKey({ name: 'x', projects: ['alpha', '*'], role: 'user' })).status).toBe(400);
    // only RFC 3339 expiry dates: looser ISO 8601 forms slipped past the check or broke the insert
    for (const expiresAt of ['20200101T000000Z', '2099-W48', '2099-01-01T00:00:00,5Z', 'tomorrow']) {
      expect((await createKey({ name: 'x', projects: ['alpha'], role: 'user', expiresAt })).status).toBe(400);
    }
    const keys = await (await req(ROOT, 'GET', '/api/admin/keys')).json();
    expect(keys.filter((k: { name: string }) => k.name === 'x')).toEqual([]);
  });
});

describe('database keys without API_KEYS', () => {
  let t: TestApp;
  /** an admin key for every project of this service, once the first test has made one */
  let adminKeyValue: string | undefined;
  afterAll(async () => {
    await t.close();
  });

  it('runs in local mode until the first key exists, then needs a key', async () => {
    t = await startApp({ API_KEYS: undefined });
    expect((await fetch(`${t.url}/api/tools`)).status).toBe(200);
    const create = (body: unknown, key?: string) =>
      fetch(`${t.url}/api/admin/keys`, { method: 'POST', headers: { 'content-type': 'application/json', ...(key && { authorization: `Bearer ${key}` }) }, body: JSON.stringify(body) });
    // issue #42: a first key that could not create keys would lock its creator out; each is refused and nothing is stored
    const future = new Date(Date.now() + 86_400_000).toISOString();
    for (const body of [
      { name: 'shop frontend', projects: ['default'], role: 'user' },
      { name: 'u', projects: ['*'], role: 'user' },
      { name: 'a', projects: ['default'], role: 'admin' },
      { name: 'a', projects: ['*'], role: 'admin', expiresAt: future },
    ]) {
      const refused = await create(body);
      expect([body, refused.status, await refused.json()]).toEqual([body, 409, expect.objectContaining({ error: 'first_key_not_admin', message: expect.stringContaining('the first key must be {"projects": ["*"], "role": "admin"} without expiresAt') })]);
    }
    expect((await fetch(`${t.url}/api/tools`)).status).toBe(200);
    const res = await create({ name: 'ops', projects: ['*'], role: 'admin' });
    expect(res.status).toBe(201);
    const { key } = await res.json();
    adminKeyValue = key;
    expect((await fetch(`${t.url}/api/tools`)).status).toBe(401);
    expect((await fetch(`${t.url}/api/tools`, { headers: { authorization: `Bearer ${key}` } })).status).toBe(200);
    // with an admin key in place, user keys are made as before
    const user = await create({ name: 'shop frontend', projects: ['default'], role: 'user' }, key);
    expect(user.status).toBe(201);
    expect((await fetch(`${t.url}/api/tools`, { headers: { authorization: `Bearer ${(await user.json()).key}` } })).status).toBe(200);
  });

  it('refuses to revoke the last active admin key for every project (409 last_admin_key, nothing changes); with a second admin key it is revoked', async () => {
    const keys = async (key: string) => (await (await fetch(`${t.url}/api/admin/keys`, { headers: { authorization: `Bearer ${key}` } })).json()) as Array<{ id: string; name: string; role: string; revokedAt: string | null }>;
    const revoke = (id: string, key: string) => fetch(`${t.url}/api/admin/keys/${id}`, { method: 'DELETE', headers: { authorization: `Bearer ${key}` } });
    const create = async (body: unknown, key: string) =>
      (await (await fetch(`${t.url}/api/admin/keys`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` }, body: JSON.stringify(body) })).json()) as { id: string; key: string };
    const first = await create({ name: 'ops 2', projects: ['*'], role: 'admin' }, adminKeyValue!);
    // revoke every admin key but `first`, one by one: allowed while another one remains
    for (const k of (await keys(first.key)).filter((k) => k.role === 'admin' && !k.revokedAt && k.id !== first.id)) expect((await revoke(k.id, first.key)).status).toBe(204);
    // an admin key bound to projects, an expired one for every project and user keys do not count
    const bound = await create({ name: 'bound admin', projects: ['default'], role: 'admin' }, first.key);
    const expiring = await create({ name: 'soon expired', projects: ['*'], role: 'admin', expiresAt: new Date(Date.now() + 3_600_000).toISOString() }, first.key);
    await t.app.get((await import('typeorm')).DataSource).query(`UPDATE api_keys SET expires_at = now() - interval '1 second' WHERE id = $1`, [expiring.id]);
    const before = await keys(first.key);
    const refused = await revoke(first.id, first.key);
    expect([refused.status, await refused.json()]).toEqual([
      409,
      expect.objectContaining({ error: 'last_admin_key', message: expect.stringMatching(/last active admin key[\s\S]*Create another admin key first[\s\S]*npm run keys/) }),
    ]);
    // nothing changed, and the key still works
    expect(await keys(first.key)).toEqual(before);
    expect((await fetch(`${t.url}/api/tools`, { headers: { authorization: `Bearer ${first.key}` } })).status).toBe(200);
    // the bound admin key and an unknown key are revoked / 404 as before
    expect((await revoke(bound.id, first.key)).status).toBe(204);
    expect((await revoke('6ec0bd7f-11c0-43da-975e-2a8ad9ebae0b', first.key)).status).toBe(404);
    // with a second live admin key, the first one is revoked; the second is then the last
    const second = await create({ name: 'ops 3', projects: ['*'], role: 'admin' }, first.key);
    expect((await revoke(first.id, first.key)).status).toBe(204);
    expect((await fetch(`${t.url}/api/tools`, { headers: { authorization: `Bearer ${first.key}` } })).status).toBe(401);
    expect((await revoke(second.id, second.key)).status).toBe(409);
    // two admins revoking each other's key at once: one wins; the other is refused (409), or its
    // key is already gone when it is checked (401, the requests ran one after the other); one key is left
    const third = await create({ name: 'ops 4', projects: ['*'], role: 'admin' }, second.key);
    const both = await Promise.all([revoke(second.id, third.key), revoke(third.id, second.key)]);
    const [won, lost] = both.map((r) => r.status).sort();
    expect([won, [401, 409].includes(lost)]).toEqual([204, true]);
    const live = (await keys(both[0].status === 204 ? third.key : second.key)).filter((k) => k.role === 'admin' && !k.revokedAt && [second.id, third.id].includes(k.id));
    expect(live).toHaveLength(1);
  });
});
