import { createHash } from 'node:crypto';
import { DataSource } from 'typeorm';
import { startApp, type TestApp } from '../support/app';
import { describeOnPostgres } from '../support/db';
import { ReplayServer, respond } from '../support/replay-server';
import { waitFor } from '../support/wait-for';

const KEY = 'shared-limit-key';
const auth = { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' };

/** A turn that streams for about `ms` (a slow scripted model), so it holds its slot meanwhile. */
const slowTurn = (ms: number) => respond.turn([{ text: 'one ' }, { text: 'two ' }, { text: 'three' }], { faults: { delayMs: Math.round(ms / 3) } });

async function startTurn(url: string, projectId = 'default'): Promise<{ status: number; limit?: string; retryAfter: string | null; text: Promise<string> }> {
  const res = await fetch(`${url}/api/chat/messages`, { method: 'POST', headers: auth, body: JSON.stringify({ content: 'hi', projectId }) });
  const text = res.text();
  if (res.status !== 429) return { status: res.status, retryAfter: null, text };
  return { status: 429, limit: JSON.parse(await text).limit, retryAfter: res.headers.get('retry-after'), text };
}

const count = (xs: Array<{ status: number }>, status: number) => xs.filter((x) => x.status === status).length;

/**
 * Issue 14 item 3: the limits that must hold across instances are counted on the shared
 * database — turn slots per key and per project, taken under one lock so simultaneous starts
 * cannot pass a full limit together, and the per-key request rate.
 */
describe('limits shared through the database', () => {
  let llm: ReplayServer;
  beforeAll(async () => {
    llm = await ReplayServer.start();
  });
  afterAll(async () => {
    await llm.close();
  });
  beforeEach(() => llm.reset());
  const env = (extra: Record<string, string>) => ({ API_KEYS: KEY, LLM_PROVIDER: 'openai', LLM_BASE_URL: llm.openAiBaseUrl, LLM_MODEL: 'scripted-model', RATE_LIMIT_PER_MINUTE: '0', ...extra });

  it('simultaneous starts cannot pass a full per-project limit together; the slot is free again once the turn ends', async () => {
    const t = await startApp(env({ MAX_CONCURRENT_TURNS_PER_PROJECT: '2' }));
    try {
      for (let i = 0; i < 30; i++) llm.enqueue(slowTurn(900));
      const answers = await Promise.all(Array.from({ length: 30 }, () => startTurn(t.url, 'alpha')));
      expect(count(answers, 200)).toBe(2);
      expect(count(answers, 429)).toBe(28);
      expect(answers.filter((a) => a.status === 429).every((a) => a.limit === 'MAX_CONCURRENT_TURNS_PER_PROJECT' && /^\d+$/.test(a.retryAfter ?? ''))).toBe(true);
      // another project is not affected
      expect((await startTurn(t.url, 'beta')).status).toBe(200);
      await Promise.all(answers.map((a) => a.text));
      llm.enqueue(slowTurn(30));
      const after = await startTurn(t.url, 'alpha');
      expect(after.status).toBe(200);
      expect(await after.text).toContain('event: done');
    } finally {
      await t.close();
    }
  }, 60_000);

  describeOnPostgres('two instances share one database only on a PostgreSQL server', 'across two instances on one PostgreSQL', () => {
    let a: TestApp;
    let b: TestApp;
    afterEach(async () => {
      await b?.close();
      await a?.close();
    });

    it('a key holding its MAX_CONCURRENT_TURNS_PER_KEY turns on one instance gets a 429 on the other', async () => {
      a = await startApp(env({ MAX_CONCURRENT_TURNS_PER_KEY: '2' }));
      b = await startApp(env({ MAX_CONCURRENT_TURNS_PER_KEY: '2' }), { databaseUrl: a.databaseUrl });
      llm.enqueue(slowTurn(1500), slowTurn(1500));
      const held = await Promise.all([startTurn(a.url), startTurn(a.url)]);
      expect(held.map((h) => h.status)).toEqual([200, 200]);
      const other = await startTurn(b.url);
      expect(other).toMatchObject({ status: 429, limit: 'MAX_CONCURRENT_TURNS_PER_KEY' });
      await Promise.all(held.map((h) => h.text));
      llm.enqueue(slowTurn(30));
      expect((await startTurn(b.url)).status).toBe(200);
    }, 60_000);

    it('simultaneous starts split over two instances pass a per-project limit of 1 exactly once', async () => {
      a = await startApp(env({ MAX_CONCURRENT_TURNS_PER_PROJECT: '1' }));
      b = await startApp(env({ MAX_CONCURRENT_TURNS_PER_PROJECT: '1' }), { databaseUrl: a.databaseUrl });
      for (let i = 0; i < 40; i++) llm.enqueue(slowTurn(900));
      const answers = await Promise.all(Array.from({ length: 40 }, (_, i) => startTurn(i % 2 ? a.url : b.url)));
      expect(count(answers, 200)).toBe(1);
      expect(count(answers, 429)).toBe(39);
      await Promise.all(answers.map((x) => x.text));
    }, 60_000);

    it('the per-key request rate holds across instances: RATE_LIMIT_PER_MINUTE in all, not per instance', async () => {
      a = await startApp(env({ RATE_LIMIT_PER_MINUTE: '100' }));
      b = await startApp(env({ RATE_LIMIT_PER_MINUTE: '100' }), { databaseUrl: a.databaseUrl });
      const answers = [];
      for (let burst = 0; burst < 3; burst++) {
        answers.push(...(await Promise.all(Array.from({ length: 100 }, (_, i) => fetch(`${i % 2 ? a.url : b.url}/api/tools`, { headers: auth }).then(async (r) => ({ status: r.status, body: await r.text() }))))));
      }
      expect(count(answers, 200)).toBe(100);
      expect(count(answers, 429)).toBe(200);
    }, 60_000);

    it("slots of an instance that died lapse after the lease and stop counting", async () => {
      a = await startApp(env({ MAX_CONCURRENT_TURNS_PER_KEY: '1', RUN_LEASE_MS: '1500' }));
      // a slot of this key left behind by an instance that stopped renewing it
      const keyId = `env:${createHash('sha256').update(KEY).digest().subarray(0, 4).toString('hex')}`;
      await a.app.get(DataSource).query(`INSERT INTO turn_slots (key_id, project_id, instance, expires_at) VALUES ($1, 'default', 'gone:1', now() + interval '1 second')`, [keyId]);
      expect(await startTurn(a.url)).toMatchObject({ status: 429, limit: 'MAX_CONCURRENT_TURNS_PER_KEY' });
      const ds = a.app.get(DataSource);
      await waitFor(async () => (await ds.query(`SELECT 1 FROM turn_slots WHERE instance = 'gone:1' AND expires_at > now()`)).length === 0, { what: 'the dead instance\'s slot lease to lapse' });
      llm.enqueue(slowTurn(30));
      expect((await startTurn(a.url)).status).toBe(200);
    }, 60_000);
  });
});
