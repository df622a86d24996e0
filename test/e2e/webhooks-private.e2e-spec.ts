import { DataSource } from 'typeorm';
import type { HostResolver } from '../../src/common/net/guarded-dispatcher';
import { WEBHOOK_RESOLVER } from '../../src/webhooks/webhook-delivery.service';
import { startApp, type TestApp } from '../support/app';
import { onPostgres } from '../support/db';
import { ReplayServer, respond } from '../support/replay-server';
import { sse } from '../support/sse-client';
import { waitFor } from '../support/wait-for';
import { WebhookReceiver } from '../support/webhook-receiver';

const json = async (res: Response) => ({ status: res.status, body: (await res.json()) as Record<string, any> });
const send = (url: string, method: string, body: unknown) => fetch(url, { method, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }).then(json);

/**
 * Without WEBHOOK_ALLOW_PRIVATE, webhooks obey fetch_page's address policy: a URL whose host is a
 * private or loopback literal is a 400 when the message is sent (nothing stored), and a name
 * that resolves to such an address is refused when the try connects, with the reason recorded.
 */
describe(`webhooks to private addresses are refused (${onPostgres() ? 'PostgreSQL' : 'PGlite'})`, () => {
  let llm: ReplayServer;
  let t: TestApp;
  let hooks: WebhookReceiver;
  // a DNS name that points at the receiver on loopback, as a rebinding attacker's would
  const resolver: HostResolver = async (host) => (host === 'hooks.rebind.test' ? [{ address: '127.0.0.1', family: 4 }] : []);

  beforeAll(async () => {
    llm = await ReplayServer.start();
    hooks = await WebhookReceiver.start();
    t = await startApp(
      { LLM_PROVIDER: 'openai', LLM_BASE_URL: llm.openAiBaseUrl, LLM_MODEL: 'scripted-model', WEBHOOK_RETRY_BASE_MS: '50', WEBHOOK_POLL_MS: '50', WEBHOOK_MAX_ATTEMPTS: '2' },
      { override: (b) => b.overrideProvider(WEBHOOK_RESOLVER).useValue(resolver) },
    );
    expect((await send(`${t.url}/api/admin/projects/default/webhook`, 'PUT', {})).status).toBe(200);
  }, 120_000);
  afterAll(async () => {
    await t.close();
    await hooks.close();
    await llm.close();
  });

  it('a private or loopback literal in webhookUrl is a 400 at send time, and nothing is stored', async () => {
    const count = async () => Number((await t.app.get(DataSource).query('SELECT count(*)::int AS n FROM runs'))[0].n);
    for (const webhookUrl of [hooks.url(), 'http://localhost:9/x', 'http://[::1]:9/x', 'http://10.1.2.3/x', 'http://169.254.169.254/latest', 'http://[::ffff:127.0.0.1]/x']) {
      const res = await send(`${t.url}/api/chat/messages`, 'POST', { content: 'x', webhookUrl });
      expect([webhookUrl, res.status, res.body.error]).toEqual([webhookUrl, 400, 'webhook_url_refused']);
    }
    expect(await count()).toBe(0);
    const admin = await send(`${t.url}/api/admin/projects/default/webhook`, 'PUT', { url: hooks.url() });
    expect([admin.status, admin.body.error]).toEqual([400, 'webhook_url_refused']);
    expect((await json(await fetch(`${t.url}/api/admin/projects/default/webhook`))).body.url).toBeNull();
  });

  it('a name that resolves to a loopback address fails delivery, with the reason in the log; the receiver never hears of it', async () => {
    llm.setFallback(respond.turn([{ text: 'Hello.' }, { finish: 'stop' }]));
    const url = `http://hooks.rebind.test:${hooks.port}/hook`;
    const res = await sse(`${t.url}/api/chat/messages`, { body: { content: 'hi', webhookUrl: url } });
    expect(res.status).toBe(200);
    const requestId = res.events.find((e) => e.event === 'done')!.data.requestId as string;
    const log = await waitFor(
      async () => {
        const l = (await json(await fetch(`${t.url}/api/chat/runs/${requestId}/webhooks`))).body;
        return l.deliveries?.[0]?.state === 'failed' ? l : null;
      },
      { what: 'the delivery to fail', timeoutMs: 10_000 },
    );
    expect(log.deliveries[0]).toMatchObject({ url, state: 'failed', attempts: 2, nextAttemptAt: null });
    for (const tr of log.deliveries[0].tries) {
      expect(tr.statusCode).toBeNull();
      expect(tr.error).toMatch(/address refused: .*loopback address \(127\.0\.0\.1\)/);
    }
    expect(hooks.received).toEqual([]);
  });
});
