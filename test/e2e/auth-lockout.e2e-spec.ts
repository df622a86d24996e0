import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startApp, type TestApp } from '../support/app';
import { createTestDatabase, onPostgres } from '../support/db';
import { captureLogs } from '../support/log-capture';
import { waitFor } from '../support/wait-for';

/**
 * Issue #30: the lock-out trap. Once a database key exists keys are required; when every one is
 * revoked and API_KEYS is unset, every keyed route is 401. The start-up log says so at error level
 * with the way out, and /api/health reports it.
 */
describe('no valid key left', () => {
  // the same database across restarts: a PostgreSQL database of this file's own, or embedded
  // PGlite on disk (an in-memory PGlite would not outlive the first app)
  let database: { env: Record<string, string>; shared: { databaseUrl?: string }; drop: () => Promise<void> };
  const apps: TestApp[] = [];
  // one capture for every app of this file: nestjs-pino keeps one root logger per process, made
  // by the first app that logs, so a later app's own capture would never see a line
  const logs = captureLogs();

  beforeAll(async () => {
    if (onPostgres()) {
      const db = await createTestDatabase();
      database = { env: {}, shared: { databaseUrl: db.url }, drop: db.drop };
    } else {
      const dir = mkdtempSync(join(tmpdir(), 'orion-lockout-'));
      database = { env: { DATABASE_URL: '', DATA_DIR: dir }, shared: {}, drop: async () => rmSync(dir, { recursive: true, force: true }) };
    }
  });
  afterAll(async () => {
    for (const a of apps) await a.close().catch(() => undefined);
    await database?.drop();
  });

  const start = async (env: Record<string, string> = {}) => {
    const app = await startApp({ ...database.env, ...env }, { ...database.shared, ...logs.options });
    apps.push(app);
    return app;
  };
  const stop = async (app: TestApp) => {
    apps.splice(apps.indexOf(app), 1);
    await app.close();
  };
  const health = async (app: TestApp) => (await (await fetch(`${app.url}/api/health`)).json()) as { status: string; auth: { status: string; message?: string } };
  /** error-level lines logged since `from` (an index into the captured lines) */
  const errorLines = (from: number) =>
    logs.logs.slice(from).flatMap((l) => l.split('\n')).filter(Boolean).map((l) => JSON.parse(l) as { level: number; msg: string }).filter((l) => l.level >= 50);

  it('a created then revoked key (the last admin key expired), restarted without API_KEYS: an error log line with the way out, and /api/health says no_valid_key', async () => {
    // local mode: no key anywhere yet
    const first = await start();
    expect((await health(first)).auth).toEqual({ status: 'local' });
    const created = await fetch(`${first.url}/api/admin/keys`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'ops', projects: ['*'], role: 'admin' }) });
    expect(created.status).toBe(201);
    const { id, key } = (await created.json()) as { id: string; key: string };
    expect((await health(first)).auth).toEqual({ status: 'keys' });
    // issue #42: the last admin key cannot be revoked through the API; a second admin key that
    // expires soon lets it be, and once that one expires no valid key is left
    const lastOne = await fetch(`${first.url}/api/admin/keys/${id}`, { method: 'DELETE', headers: { authorization: `Bearer ${key}` } });
    expect([lastOne.status, ((await lastOne.json()) as { error: string }).error]).toEqual([409, 'last_admin_key']);
    const expiresAt = new Date(Date.now() + 3_000).toISOString();
    const shortLived = await fetch(`${first.url}/api/admin/keys`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` }, body: JSON.stringify({ name: 'temp', projects: ['*'], role: 'admin', expiresAt }) });
    expect(shortLived.status).toBe(201);
    const temp = ((await shortLived.json()) as { key: string }).key;
    const revoked = await fetch(`${first.url}/api/admin/keys/${id}`, { method: 'DELETE', headers: { authorization: `Bearer ${key}` } });
    expect(revoked.status).toBe(204);
    // until the short-lived key has expired
    await waitFor(async () => (await fetch(`${first.url}/api/tools`, { headers: { authorization: `Bearer ${temp}` } })).status === 401, { timeoutMs: 15_000, intervalMs: 200, what: 'the short-lived admin key to expire' });
    await stop(first);

    const before = logs.logs.length;
    const second = await start();
    const errors = errorLines(before);
    expect(errors).toHaveLength(1);
    expect(errors[0].msg).toContain('no valid key exists');
    expect(errors[0].msg).toContain('npm run keys -- create');
    expect(errors[0].msg).toContain('API_KEYS');

    const h = await health(second);
    expect(h.status).toBe('degraded');
    expect(h.auth.status).toBe('no_valid_key');
    expect(h.auth.message).toContain('npm run keys -- create');
    // the trap itself: nothing but the public routes answers
    expect((await fetch(`${second.url}/api/tools`)).status).toBe(401);
    expect((await fetch(`${second.url}/api/tools`, { headers: { authorization: `Bearer ${key}` } })).status).toBe(401);
    await stop(second);

    // the documented way out: API_KEYS set, the service is usable and says nothing alarming
    const beforeRecovery = logs.logs.length;
    const third = await start({ API_KEYS: 'lockout-recovery-key' });
    expect(errorLines(beforeRecovery)).toEqual([]);
    expect(await health(third)).toMatchObject({ status: 'ok', auth: { status: 'keys' } });
    expect((await fetch(`${third.url}/api/tools`, { headers: { authorization: 'Bearer lockout-recovery-key' } })).status).toBe(200);
    // three starts; embedded PGlite on disk makes its folder and migrates it at the first
  }, 180_000);
});
