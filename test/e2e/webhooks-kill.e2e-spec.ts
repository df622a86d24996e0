import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawn, spawnSync } from 'node:child_process';
import { freePort, type Instance } from '../faults/harness';
import { createTestDatabase, onPostgres } from '../support/db';
import { ReplayServer, respond } from '../support/replay-server';
import { sse } from '../support/sse-client';
import { waitFor } from '../support/wait-for';
import { WebhookReceiver } from '../support/webhook-receiver';

const DIST = join(__dirname, '..', '..', 'dist', 'main.js');
/**
 * Starts the built service (the fault harness's way, with a longer wait: on a loaded machine the
 * first start of a PGlite data folder takes most of a minute).
 */
async function startOrion(port: number, env: Record<string, string>): Promise<Instance> {
  const child = spawn(process.execPath, [DIST], { env: { ...process.env, ...env, PORT: String(port), LOG_LEVEL: 'error' }, stdio: ['ignore', 'ignore', 'ignore'] });
  const url = `http://127.0.0.1:${port}`;
  try {
    await waitFor(async () => (await fetch(`${url}/api/health/live`)).ok, { timeoutMs: 180_000, intervalMs: 200, what: `Orion on ${port} to start` });
    return { port, url, child };
  } catch (e) {
    child.kill('SIGKILL');
    throw e;
  }
}

const json = async (res: Response) => ({ status: res.status, body: (await res.json()) as Record<string, any> });

/**
 * The outbox row is committed with the run's close, so an instance killed with SIGKILL right
 * after a run closed (its first try had reached the receiver, unanswered, its outcome never
 * recorded) loses nothing: once the try's claim lapses, the restarted instance delivers the
 * event, with the same webhook-id. Real processes (the built service), as the fault suite runs
 * them: PGlite in a data folder that survives the kill, or a PostgreSQL database.
 */
describe(`webhooks survive kill -9 (${onPostgres() ? 'PostgreSQL' : 'PGlite'})`, () => {
  let llm: ReplayServer;
  let hooks: WebhookReceiver;
  let db: { url: string; drop: () => Promise<void> };
  let dataDir: string;
  let a: Instance | null = null;
  let env: Record<string, string>;

  beforeAll(async () => {
    // the service as it ships: built into dist/ (only when a source changed since the last build)
    const built = spawnSync(process.execPath, [join(__dirname, '..', '..', 'scripts', 'build-if-stale.mjs')], { stdio: 'inherit' });
    if (built.status !== 0) throw new Error('the build failed');
    llm = await ReplayServer.start();
    hooks = await WebhookReceiver.start();
    dataDir = mkdtempSync(join(tmpdir(), 'orion-wh-kill-'));
    db = onPostgres() ? await createTestDatabase() : { url: '', drop: async () => undefined };
    env = {
      DATABASE_URL: db.url,
      DATA_DIR: dataDir,
      LLM_PROVIDER: 'openai',
      LLM_BASE_URL: llm.openAiBaseUrl,
      LLM_MODEL: 'scripted-model',
      MCP_CONFIG: '',
      API_KEYS: '',
      WEBHOOK_ALLOW_PRIVATE: 'true',
      WEBHOOK_POLL_MS: '100',
      WEBHOOK_RETRY_BASE_MS: '100',
      // a try's claim lapses 5 s after its deadline: the restarted instance takes it then
      WEBHOOK_TIMEOUT_MS: '1000',
    };
  }, 300_000);
  afterAll(async () => {
    a?.child.kill('SIGKILL');
    await hooks.close();
    await llm.close();
    await db.drop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('an instance killed right after the run closed delivers the event after restart, same webhook-id', async () => {
    const port = await freePort();
    a = await startOrion(port, env);
    const created = await json(await fetch(`${a.url}/api/admin/projects/default/webhook`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: '{}' }));
    hooks.secrets = [created.body.secret as string];
    llm.setFallback(respond.turn([{ text: 'Before the crash.' }, { finish: 'stop' }]));

    // the first try reaches the receiver, which holds it; the instance dies at that moment
    const killed = new Promise<void>((resolve) => {
      hooks.onReceive = () => {
        hooks.onReceive = () => undefined;
        a!.child.once('exit', () => resolve());
        a!.child.kill('SIGKILL');
      };
    });
    hooks.answerNext({ hold: killed, status: 200 });
    const res = await sse(`${a.url}/api/chat/messages`, { body: { content: 'hi', webhookUrl: hooks.url() } });
    const requestId = res.events.find((e) => e.data.requestId)!.data.requestId as string;
    await killed;
    expect(hooks.received).toHaveLength(1);

    a = await startOrion(port, env);
    const delivered = await waitFor(() => hooks.about(requestId).find((r) => r.answered === 204), { what: 'the event delivered by the restarted instance', timeoutMs: 30_000 });
    const all = hooks.about(requestId);
    expect(all.every((r) => r.verified && r.id === all[0].id && r.body === all[0].body)).toBe(true);
    expect(delivered.payload).toMatchObject({ type: 'run.completed', requestId, answer: 'Before the crash.' });
    const log = await waitFor(
      async () => {
        const l = (await json(await fetch(`${a!.url}/api/chat/runs/${requestId}/webhooks`))).body;
        return l.deliveries?.[0]?.state === 'delivered' ? l : null;
      },
      { what: 'the delivery log to say delivered' },
    );
    expect(log.deliveries[0].attempts).toBe(2);
    expect(log.deliveries[0].tries.map((x: { statusCode: number | null; error: string | null }) => [x.statusCode, x.error])).toEqual([
      [null, 'no outcome recorded: the instance sending this try stopped'],
      [204, null],
    ]);
  }, 420_000);
});
