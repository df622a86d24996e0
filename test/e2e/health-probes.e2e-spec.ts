import { DataSource } from 'typeorm';
import { startApp, type TestApp } from '../support/app';

/** Orchestrator probes: public even with API_KEYS, 503 with the failing check named when not ready. */
describe('GET /api/health/live and /api/health/ready', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startApp({ API_KEYS: 'probe-test-key' });
  });
  afterAll(async () => {
    await t?.close();
  });

  const get = async (path: string) => {
    const res = await fetch(`${t.url}${path}`);
    return { status: res.status, body: (await res.json()) as Record<string, any> };
  };

  it('live answers 200 without a key', async () => {
    const live = await get('/api/health/live');
    expect(live).toEqual({ status: 200, body: expect.objectContaining({ status: 'ok' }) });
  });

  it('ready reports the database, the migrations and the model, without a key', async () => {
    const ready = await get('/api/health/ready');
    expect(ready.status).toBe(200);
    expect(ready.body.status).toBe('ok');
    expect(ready.body.details).toMatchObject({
      database: { status: 'up' },
      migrations: { status: 'up' },
      llm: { status: 'up', provider: 'replay', model: 'replay', replay: true },
    });
    // the documented /api/health is unchanged
    const legacy = await get('/api/health');
    expect(legacy.status).toBe(200);
    expect(legacy.body).toMatchObject({ status: 'ok', db: { status: 'up' }, llm: { provider: 'replay' } });
  });

  it('ready is 503 naming the migrations when one is not applied', async () => {
    const ds = t.app.get(DataSource);
    const [last] = await ds.query('SELECT id, timestamp, name FROM migrations ORDER BY timestamp DESC LIMIT 1');
    await ds.query('DELETE FROM migrations WHERE id = $1', [last.id]);
    try {
      const ready = await get('/api/health/ready');
      expect(ready.status).toBe(503);
      expect(ready.body.details.migrations).toMatchObject({ status: 'down', message: 'migrations are pending' });
      expect(ready.body.details.database.status).toBe('up');
      expect((await get('/api/health/live')).status).toBe(200);
    } finally {
      await ds.query('INSERT INTO migrations (id, timestamp, name) VALUES ($1, $2, $3)', [last.id, last.timestamp, last.name]);
    }
    expect((await get('/api/health/ready')).status).toBe(200);
  });

  it('ready is 503 naming the database when it is unreachable; live stays 200', async () => {
    await t.app.get(DataSource).destroy();
    const ready = await get('/api/health/ready');
    expect(ready.status).toBe(503);
    expect(ready.body.details.database.status).toBe('down');
    expect((await get('/api/health/live')).status).toBe(200);
    expect((await get('/api/health')).body.status).toBe('degraded');
  });
});
