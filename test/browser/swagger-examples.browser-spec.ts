import type { Browser, Page } from 'playwright-core';
import { startApp, type TestApp } from '../support/app';
import { guardOutbound, type OutboundGuard } from '../support/outbound-guard';
import { describeBrowser, launchChromium, openPage, screenshot } from './browser-harness';

/** About fifty operations through Swagger UI, five of them whole turns, then each again by fetch, on a shared 2-core machine. */
const PASS_TIMEOUT_MS = 300_000;

type Operation = { operationId: string; parameters?: Array<{ name: string; in: string; required?: boolean }>; requestBody?: unknown };
type Doc = { paths: Record<string, Record<string, Operation>> };
/** One operation as Swagger UI sent it and what came back. */
type Sent = { operationId: string; method: string; url: string; body: string | null; contentType: string | undefined; status: number; text: string };

const SSE_END = (last: 'done' | 'result') => (text: string) => expect([text.trimStart().startsWith('event: '), new RegExp(`event: ${last}\\n`).test(text)]).toEqual([true, true]);
const JSON_HAS = (partial: Record<string, unknown>) => (text: string) => expect(JSON.parse(text)).toMatchObject(partial);
const NOT_FOUND = (error: string) => JSON_HAS({ statusCode: 404, error });

/**
 * What each operation's example answers on a fresh service with the defaults (embedded database,
 * replay model, no keys, two-stage off), as docs/API.md documents it. An example that names
 * something of yours (a run, a conversation, a key, an approval) has a made-up UUID: its
 * documented 404. Every operation of the document must be here: a new one fails this test
 * until its example is checked too.
 */
const EXPECTED: Record<string, { status: number; check?: (text: string) => void; again?: number }> = {
  listTraceEvents: { status: 200 },
  ingestKnowledge: { status: 200 },
  listKnowledgeModules: { status: 200 },
  searchKnowledge: { status: 200 },
  listTools: { status: 200 },
  executeTools: { status: 200, check: JSON_HAS({ isSuccess: true, executions: [{ toolName: 'list_files', outcome: 'success' }] }) },
  executeToolsStream: { status: 200, check: SSE_END('result') },
  searchToolIndex: { status: 200 },
  sendMessage: { status: 200, check: SSE_END('done') },
  sendMessageTwoStage: { status: 404, check: NOT_FOUND('two_stage_disabled') },
  resumeTwoStageRun: { status: 404, check: NOT_FOUND('two_stage_disabled') },
  forkRun: { status: 404, check: NOT_FOUND('two_stage_disabled') },
  listConversations: { status: 200 },
  listConversationMessages: { status: 404, check: NOT_FOUND('conversation_not_found') },
  renameConversation: { status: 404, check: NOT_FOUND('conversation_not_found') },
  deleteConversation: { status: 404, check: NOT_FOUND('conversation_not_found') },
  updateConversationSettings: { status: 404, check: NOT_FOUND('conversation_not_found') },
  sendUiMessage: { status: 200, check: (text) => expect(text).toMatch(/"type":"finish"[\s\S]*data: \[DONE\]\n\n$/) },
  // the chat of the sendUiMessage example has no active run any more
  resumeUiStream: { status: 204 },
  getHealth: { status: 200 },
  getCapabilities: { status: 200 },
  getLiveness: { status: 200 },
  getReadiness: { status: 200 },
  getMetrics: { status: 200 },
  createApiKey: { status: 201, check: JSON_HAS({ role: 'admin', projects: ['*'], key: expect.stringMatching(/^orn_/) }) },
  listApiKeys: { status: 200 },
  revokeApiKey: { status: 404 },
  listMcpToolPins: { status: 200 },
  approveMcpTool: { status: 404, check: JSON_HAS({ message: 'No MCP tool everything__echo' }) },
  getToolApprovals: { status: 200 },
  putToolApprovals: { status: 200 },
  // the example's values are given back each in its largest whole unit: its 7d reads 1w
  getProjectRetention: { status: 200, check: JSON_HAS({ projectId: 'default', deployment: { runs: null, trace: null, conversations: null } }) },
  putProjectRetention: { status: 200, check: JSON_HAS({ projectId: 'default', project: { runs: '30d', trace: '1w', conversations: 'forever' } }) },
  // no budget yet, then the example's, then removed; a key id is not checked against the keys (docs/API.md, Budgets)
  // sent again in reverse order: the DELETE then finds none, and the GET after the PUT finds one
  getProjectBudget: { status: 404, again: 200 },
  putProjectBudget: { status: 200, check: JSON_HAS({ period: 'month', tokens: 50_000_000, state: 'ok' }) },
  deleteProjectBudget: { status: 204, again: 404 },
  getKeyBudget: { status: 404, again: 200 },
  putKeyBudget: { status: 200, check: JSON_HAS({ period: 'day', tokens: 2_000_000 }) },
  deleteKeyBudget: { status: 204, again: 404 },
  getProjectUsage: { status: 200, check: JSON_HAS({ totals: { turns: expect.any(Number) } }) },
  // the signing secret only: no URL, so nothing of a later turn goes anywhere
  configureProjectWebhook: { status: 200, check: JSON_HAS({ projectId: 'default', url: null }) },
  getProjectWebhook: { status: 200, check: JSON_HAS({ projectId: 'default', url: null }) },
  rotateProjectWebhookSecret: { status: 200, check: JSON_HAS({ projectId: 'default', url: null }) },
  openAiListModels: { status: 200 },
  openAiRetrieveModel: { status: 200, check: JSON_HAS({ id: 'orion-unified', object: 'model' }) },
  openAiCreateChatCompletion: { status: 200, check: JSON_HAS({ object: 'chat.completion' }) },
  openAiCreateResponse: { status: 200, check: JSON_HAS({ object: 'response', status: 'completed' }) },
  // the example's response id names no run of yours
  openAiRetrieveResponse: { status: 404, check: JSON_HAS({ error: { code: 'response_not_found' } }) },
  openAiCancelResponse: { status: 404, check: JSON_HAS({ error: { code: 'response_not_found' } }) },
  getRunWebhooks: { status: 404, check: NOT_FOUND('run_not_found') },
  getRun: { status: 404, check: NOT_FOUND('run_not_found') },
  streamRunEvents: { status: 404, check: NOT_FOUND('run_not_found') },
  cancelRun: { status: 404, check: NOT_FOUND('run_not_found') },
  pauseRun: { status: 404, check: NOT_FOUND('run_not_found') },
  listRunApprovals: { status: 404, check: NOT_FOUND('run_not_found') },
  decideApproval: { status: 404, check: NOT_FOUND('run_not_found') },
};

/** `/api/chat/runs/{requestId}` → a pattern of the paths Swagger UI may request for it. */
const pathPattern = (path: string) => new RegExp(`^${path.replace(/\{[^}]+\}/g, '[^/]+')}$`);

/**
 * Issue #42, item 1: every Swagger example as shipped. On a fresh service started with the
 * defaults, every operation of the document, in document order, is opened in Swagger UI, "Try it
 * out" pressed and Execute pressed with nothing typed in; after the key example, its key is given
 * to Authorize (as its description says). Each answer is the documented one. Then every request
 * Swagger UI sent is sent again, in reverse order, with the key it handed out: the service still
 * answers each the same. No connection left the machine meanwhile (the app's process refuses and
 * records any; the page's requests all went to the service).
 */
describeBrowser('Swagger UI: every operation\'s example, as shipped, on a fresh service', () => {
  let browser: Browser;
  let t: TestApp;
  let guard: OutboundGuard;

  beforeAll(async () => {
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
  });

  async function authorize(page: Page, key: string): Promise<void> {
    await page.locator('.auth-wrapper button.authorize').click();
    const dialog = page.locator('.modal-ux');
    await dialog.locator('input').fill(key);
    await dialog.locator('.auth-btn-wrapper button.authorize').click();
    await dialog.locator('.auth-btn-wrapper button.btn-done').click();
  }

  /** Try it out → Execute on one operation, with nothing typed in; the request as sent and the answer as Swagger UI shows it. */
  async function execute(page: Page, path: string, method: string, operationId: string): Promise<Sent> {
    const block = page.locator(`.opblock[id^="operations-"][id$="-${operationId}"]`).first();
    await block.locator('.opblock-summary').first().click();
    await block.locator('.try-out__btn').click();
    const pattern = pathPattern(path);
    const answered = page.waitForResponse((r) => r.request().method() === method.toUpperCase() && pattern.test(new URL(r.url()).pathname), { timeout: 90_000 });
    await block.locator('button.execute').click();
    // a required parameter without a value keeps Execute from sending anything: Swagger UI marks it invalid
    const refused = block
      .locator('input.invalid, textarea.invalid, select.invalid')
      .first()
      .waitFor({ timeout: 90_000 })
      .then(
        () => 'refused' as const,
        () => 'refused' as const,
      );
    const response = await Promise.race([answered.catch(() => 'refused' as const), refused]);
    if (response === 'refused') throw new Error(`${operationId}: Execute sent no request (a required parameter has no value, or no answer came)`);
    const text = response.status() === 204 ? '' : await response.text();
    const shown = block.locator('.live-responses-table .response .response-col_status').first();
    await shown.waitFor({ timeout: 30_000 });
    const status = Number((await shown.textContent())?.trim());
    await block.locator('.opblock-summary').first().click();
    const request = response.request();
    return { operationId, method: request.method(), url: request.url(), body: request.postData(), contentType: request.headers()['content-type'], status, text };
  }

  function expectAnswer(operationId: string, status: number, text: string, again = false): void {
    const expected = EXPECTED[operationId];
    if (again && expected.again !== undefined) return void expect([operationId, status]).toEqual([operationId, expected.again]);
    expect([operationId, status]).toEqual([operationId, expected.status]);
    expected.check?.(text);
  }

  beforeEach(() => {
    guard = guardOutbound();
  });
  afterEach(async () => {
    guard.restore();
    await t?.close();
  });

  it('each runs unedited in document order, the service stays usable with the key it handed out, and nothing leaves the machine', async () => {
    // the guard is live: a connection off the machine is refused and recorded
    await fetch('http://192.0.2.1:80/').catch(() => undefined);
    expect(guard.attempts).toEqual(['192.0.2.1:80']);
    guard.attempts.length = 0;

    t = await startApp();
    const doc = (await (await fetch(`${t.url}/docs-json`)).json()) as Doc;
    const operations = Object.entries(doc.paths).flatMap(([path, item]) => Object.entries(item).map(([method, op]) => ({ path, method, operationId: op.operationId })));
    expect(operations.map((o) => o.operationId).sort()).toEqual(Object.keys(EXPECTED).sort());

    const { context, page, problems } = await openPage(browser, { width: 1280, height: 1000 });
    const pageHosts = new Set<string>();
    page.on('request', (r) => pageHosts.add(new URL(r.url()).host));
    const sent: Sent[] = [];
    let key: string | undefined;
    try {
      await page.goto(`${t.url}/docs`);
      await page.locator('.opblock').first().waitFor({ timeout: 20_000 });
      for (const { path, method, operationId } of operations) {
        const answer = await execute(page, path, method, operationId);
        expectAnswer(operationId, answer.status, answer.text);
        sent.push(answer);
        if (operationId === 'createApiKey') {
          // keys are on from here: the key handed out goes to Authorize, as the operation's description says
          key = (JSON.parse(answer.text) as { key: string }).key;
          await authorize(page, key);
        }
      }
      await screenshot(page, 'swagger-examples-as-shipped', true);
      // the answers asked for: the documented 404s of made-up ids, and two-stage being off
      expect(problems.errors.filter((e) => !e.startsWith('HTTP 404'))).toEqual([]);
    } finally {
      await context.close();
    }
    expect([...pageHosts]).toEqual([new URL(t.url).host]);
    expect(key).toEqual(expect.stringMatching(/^orn_/));

    // keys are on now: without one only the public routes answer; with the key handed out, every example as before, in reverse order
    expect((await fetch(`${t.url}/api/health`)).status).toBe(200);
    expect((await fetch(`${t.url}/api/tools`)).status).toBe(401);
    for (const s of [...sent].reverse()) {
      const res = await fetch(s.url, { method: s.method, headers: { authorization: `Bearer ${key}`, ...(s.contentType && { 'content-type': s.contentType }) }, body: s.body ?? undefined });
      expectAnswer(s.operationId, res.status, res.status === 204 ? '' : await res.text(), true);
    }

    // no webhook anywhere: the project has no URL, and the runs of the examples queued none
    const auth = { authorization: `Bearer ${key}` };
    expect(await (await fetch(`${t.url}/api/admin/projects/default/webhook`, { headers: auth })).json()).toMatchObject({ url: null });
    const runIds = [...new Set(sent.flatMap((s) => [...s.text.matchAll(/"requestId":"([0-9a-f-]{36})"/g)].map((m) => m[1])))];
    expect(runIds.length).toBeGreaterThan(0);
    let logs = 0;
    for (const requestId of runIds) {
      const log = await fetch(`${t.url}/api/chat/runs/${requestId}/webhooks`, { headers: auth });
      if (log.status !== 200) continue;
      expect([requestId, (await log.json()).deliveries]).toEqual([requestId, []]);
      logs += 1;
    }
    // the turns of sendMessage and the tool-only runs at least
    expect(logs).toBeGreaterThanOrEqual(2);
    expect(guard.attempts).toEqual([]);
  }, PASS_TIMEOUT_MS);
});
