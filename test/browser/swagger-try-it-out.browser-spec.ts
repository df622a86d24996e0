import type { Browser, BrowserContext, Page } from 'playwright-core';
import { startApp, type TestApp } from '../support/app';
import { describeBrowser, launchChromium, openPage, screenshot, type PageProblems } from './browser-harness';

const ADMIN_KEY = 'swagger-try-admin-key';
/** Ten operations, each a real request (three or four of them whole turns), on a shared 2-core machine. */
const PASS_TIMEOUT_MS = 300_000;

type Doc = { paths: Record<string, Record<string, { operationId: string; requestBody?: { content: Record<string, { example?: unknown }> } }>> };

/**
 * Issue #30, item 1: Swagger UI as shipped. On a service started with the defaults (embedded
 * database, replay model, no keys), and again with keys on and an admin key given to Authorize,
 * every operation that takes a body is opened, "Try it out" pressed and Execute pressed with the
 * example body as it stands. Each answers 2xx (a stream: the whole run, up to `done` or
 * `result`), or the answer docs/API.md documents for that set-up (two-stage off: 404
 * two_stage_disabled; no MCP server: 404 for an approval). Only the ids the example cannot know
 * (a conversation, a run) are filled in, as a user would.
 */
describeBrowser('Swagger UI "Try it out" on every operation with a body', () => {
  let browser: Browser;

  beforeAll(async () => {
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
  });

  /** Everything one pass needs: the app, its document, a page on /docs, the bodies Swagger UI sent. */
  async function open(t: TestApp): Promise<{ context: BrowserContext; page: Page; problems: PageProblems; doc: Doc; sent: Map<string, string> }> {
    const doc = (await (await fetch(`${t.url}/docs-json`)).json()) as Doc;
    const { context, page, problems } = await openPage(browser, { width: 1280, height: 1000 });
    const sent = new Map<string, string>();
    page.on('request', (r) => {
      if (r.method() !== 'GET' && new URL(r.url()).pathname.startsWith('/api/')) sent.set(`${r.method()} ${new URL(r.url()).pathname}`, r.postData() ?? '');
    });
    await page.goto(`${t.url}/docs`);
    await page.locator('.opblock').first().waitFor({ timeout: 20_000 });
    return { context, page, problems, doc, sent };
  }

  async function authorize(page: Page, key: string): Promise<void> {
    await page.locator('.auth-wrapper button.authorize').click();
    const dialog = page.locator('.modal-ux');
    await dialog.locator('input').fill(key);
    await dialog.locator('.auth-btn-wrapper button.authorize').click();
    await dialog.locator('.auth-btn-wrapper button.btn-done').click();
  }

  /**
   * Opens an operation, presses "Try it out", fills only the given path parameters (and, where
   * `body` is given, the body), presses Execute and returns the status and body Swagger UI shows.
   */
  async function tryItOut(page: Page, operationId: string, fill: { params?: Record<string, string>; body?: unknown } = {}): Promise<{ status: number; text: string }> {
    const op = page.locator(`.opblock[id^="operations-"][id$="-${operationId}"]`);
    await op.locator('.opblock-summary').first().click();
    await op.locator('.try-out__btn').click();
    for (const [name, value] of Object.entries(fill.params ?? {})) await op.locator(`tr[data-param-name="${name}"] input`).fill(value);
    if (fill.body !== undefined) await op.locator('textarea.body-param__text').fill(JSON.stringify(fill.body, null, 2));
    await op.locator('button.execute').click();
    const status = op.locator('.live-responses-table .response .response-col_status').first();
    await status.waitFor({ timeout: 60_000 });
    const text = (await op.locator('.live-responses-table .response-col_description pre').first().textContent()) ?? '';
    const shown = Number((await status.textContent())?.trim());
    // closed again: only one operation's panel open at a time
    await op.locator('.opblock-summary').first().click();
    return { status: shown, text };
  }

  const bodyOperations = (doc: Doc): string[] =>
    Object.values(doc.paths).flatMap((item) => Object.values(item).filter((o) => o.requestBody).map((o) => o.operationId));

  /** The example of an operation, as the document gives it. */
  const exampleOf = (doc: Doc, operationId: string): unknown =>
    Object.values(doc.paths).flatMap((item) => Object.values(item)).find((o) => o.operationId === operationId)?.requestBody?.content['application/json']?.example;

  const streamEnded = (text: string, last: 'done' | 'result') => new RegExp(`event: ${last}\\n`).test(text) && text.trimStart().startsWith('event: ');
  /** The AI SDK UI message stream: data lines only, its finish part, then [DONE]. */
  const uiStreamEnded = (text: string) => /"type":"finish"/.test(text) && /data: \[DONE\]\n\n$/.test(text);

  it('with the defaults (no keys, two-stage off): every example runs as it stands', async () => {
    const t = await startApp();
    const { context, page, problems, doc, sent } = await open(t);
    try {
      const tried = new Set<string>();
      const run = async (id: string, fill?: Parameters<typeof tryItOut>[2]) => {
        tried.add(id);
        return tryItOut(page, id, fill);
      };

      const send = await run('sendMessage');
      expect([send.status, streamEnded(send.text, 'done')]).toEqual([200, true]);
      expect(JSON.parse(sent.get('POST /api/chat/messages')!)).toEqual(exampleOf(doc, 'sendMessage'));
      const conversationId = /"conversationId":"([0-9a-f-]{36})"/.exec(send.text)![1];
      const ui = await run('sendUiMessage');
      expect([ui.status, uiStreamEnded(ui.text)]).toEqual([200, true]);

      const twoStage = await run('sendMessageTwoStage');
      expect([twoStage.status, JSON.parse(twoStage.text).error]).toEqual([404, 'two_stage_disabled']);
      const resume = await run('resumeTwoStageRun');
      expect([resume.status, JSON.parse(resume.text).error]).toEqual([404, 'two_stage_disabled']);
      const fork = await run('forkRun', { params: { requestId: /"requestId":"([0-9a-f-]{36})"/.exec(send.text)![1] } });
      expect([fork.status, JSON.parse(fork.text).error]).toEqual([404, 'two_stage_disabled']);

      const execute = await run('executeTools');
      expect(execute.status).toBe(200);
      expect(JSON.parse(execute.text)).toMatchObject({ isSuccess: true, error: null, executions: [{ toolName: 'list_files', outcome: 'success', isError: false }] });
      const stream = await run('executeToolsStream');
      expect([stream.status, streamEnded(stream.text, 'result')]).toEqual([200, true]);

      expect((await run('ingestKnowledge')).status).toBe(200);
      expect((await run('renameConversation', { params: { id: conversationId } })).status).toBe(200);
      expect((await run('updateConversationSettings', { params: { id: conversationId } })).status).toBe(200);
      const completion = await run('openAiCreateChatCompletion');
      expect([completion.status, JSON.parse(completion.text).object]).toEqual([200, 'chat.completion']);
      const response = await run('openAiCreateResponse');
      expect([response.status, JSON.parse(response.text).object, JSON.parse(response.text).status]).toEqual([200, 'response', 'completed']);
      // no MCP server is configured by default: the documented 404
      const approve = await run('approveMcpTool', { params: { name: 'everything__echo' } });
      expect([approve.status, JSON.parse(approve.text).message]).toEqual([404, 'No MCP tool everything__echo']);
      expect((await run('putToolApprovals', { params: { projectId: 'default' } })).status).toBe(200);
      // the project's own retention, as the example sets it (docs/API.md, Storage)
      expect((await run('putProjectRetention', { params: { projectId: 'default' } })).status).toBe(200);
      // the example budgets (far above what these turns spend), on the project and on a key id
      expect((await run('putProjectBudget', { params: { projectId: 'default' } })).status).toBe(200);
      expect((await run('putKeyBudget', { params: { keyId: 'local' } })).status).toBe(200);
      expect((await run('configureProjectWebhook', { params: { projectId: 'default' }, body: {} })).status).toBe(200);
      // a run of yours that asked for no approval: the documented 404 for an approval it never asked
      const decision = await run('decideApproval', { params: { requestId: /"requestId":"([0-9a-f-]{36})"/.exec(send.text)![1], approvalId: '00000000-0000-4000-8000-000000000000' } });
      expect([decision.status, JSON.parse(decision.text).error]).toEqual([404, 'approval_not_found']);
      // last: the first key turns keys on for good (docs/API.md, "Keys and projects")
      const key = await run('createApiKey');
      expect([key.status, JSON.parse(key.text).key]).toEqual([201, expect.stringMatching(/^orn_/)]);

      expect([...tried].sort()).toEqual(bodyOperations(doc).sort());
      await screenshot(page, 'swagger-try-it-out-defaults', true);
      expect(problems.errors.filter((e) => !e.startsWith('HTTP 404'))).toEqual([]);
    } finally {
      await context.close();
      await t.close();
    }
  }, PASS_TIMEOUT_MS);

  it('with keys on and two-stage on, after Authorize with an admin key: every example runs, the key sent each time', async () => {
    const t = await startApp({ API_KEYS: ADMIN_KEY, TWO_STAGE_ENABLED: 'true' });
    const { context, page, problems, doc } = await open(t);
    const auth: string[] = [];
    page.on('request', (r) => {
      if (r.method() !== 'GET' && /^\/(api|v1)\//.test(new URL(r.url()).pathname)) auth.push(r.headers().authorization ?? '');
    });
    try {
      await authorize(page, ADMIN_KEY);
      const tried = new Set<string>();
      const run = async (id: string, fill?: Parameters<typeof tryItOut>[2]) => {
        tried.add(id);
        return tryItOut(page, id, fill);
      };

      const send = await run('sendMessage');
      expect([send.status, streamEnded(send.text, 'done')]).toEqual([200, true]);
      const conversationId = /"conversationId":"([0-9a-f-]{36})"/.exec(send.text)![1];

      const ui = await run('sendUiMessage');
      expect([ui.status, uiStreamEnded(ui.text)]).toEqual([200, true]);

      const twoStage = await run('sendMessageTwoStage');
      expect([twoStage.status, streamEnded(twoStage.text, 'done')]).toEqual([200, true]);
      // the resume example needs a run of yours: this two-stage run and its first checkpoint
      const requestId = /"requestId":"([0-9a-f-]{36})"/.exec(twoStage.text)![1];
      const runInfo = (await (await fetch(`${t.url}/api/chat/runs/${requestId}`, { headers: { authorization: `Bearer ${ADMIN_KEY}` } })).json()) as { checkpoints: number[] };
      expect(runInfo.checkpoints.length).toBeGreaterThan(0);
      // a completed run is not resumed (its documented 409 names the fork route); it is forked
      const resume = await run('resumeTwoStageRun', { body: { ...(exampleOf(doc, 'resumeTwoStageRun') as object), requestId, resumeFromPhaseIndex: runInfo.checkpoints[0] } });
      expect([resume.status, JSON.parse(resume.text).error, JSON.parse(resume.text).message]).toEqual([409, 'run_finished', expect.stringContaining(`POST /api/chat/runs/${requestId}/fork`)]);
      const fork = await run('forkRun', { params: { requestId }, body: { ...(exampleOf(doc, 'forkRun') as object), fromPhaseIndex: runInfo.checkpoints[0] } });
      expect([fork.status, streamEnded(fork.text, 'done'), fork.text.includes(`"parentRequestId":"${requestId}"`)]).toEqual([200, true, true]);

      expect((await run('executeTools')).status).toBe(200);
      const stream = await run('executeToolsStream');
      expect([stream.status, streamEnded(stream.text, 'result')]).toEqual([200, true]);
      expect((await run('ingestKnowledge')).status).toBe(200);
      expect((await run('renameConversation', { params: { id: conversationId } })).status).toBe(200);
      expect((await run('updateConversationSettings', { params: { id: conversationId } })).status).toBe(200);
      const approve = await run('approveMcpTool', { params: { name: 'everything__echo' } });
      expect(approve.status).toBe(404);
      expect((await run('putToolApprovals', { params: { projectId: 'default' } })).status).toBe(200);
      // the project's own retention, as the example sets it (docs/API.md, Storage)
      expect((await run('putProjectRetention', { params: { projectId: 'default' } })).status).toBe(200);
      // the example budgets (far above what these turns spend), on the project and on a key id
      expect((await run('putProjectBudget', { params: { projectId: 'default' } })).status).toBe(200);
      expect((await run('putKeyBudget', { params: { keyId: 'local' } })).status).toBe(200);
      expect((await run('configureProjectWebhook', { params: { projectId: 'default' }, body: {} })).status).toBe(200);
      const decision = await run('decideApproval', { params: { requestId, approvalId: '00000000-0000-4000-8000-000000000000' } });
      expect([decision.status, JSON.parse(decision.text).error]).toEqual([404, 'approval_not_found']);
      expect((await run('createApiKey')).status).toBe(201);
      const completion = await run('openAiCreateChatCompletion');
      expect([completion.status, JSON.parse(completion.text).object]).toEqual([200, 'chat.completion']);
      const response = await run('openAiCreateResponse');
      expect([response.status, JSON.parse(response.text).object, JSON.parse(response.text).status]).toEqual([200, 'response', 'completed']);

      expect([...tried].sort()).toEqual(bodyOperations(doc).sort());
      expect(auth.length).toBe(tried.size);
      expect(new Set(auth)).toEqual(new Set([`Bearer ${ADMIN_KEY}`]));
      await screenshot(page, 'swagger-try-it-out-keys', true);
      // the one error answer asked for: the resume of a completed run (above)
      expect(problems.errors.filter((e) => !e.startsWith('HTTP 404'))).toEqual(['HTTP 409 POST /api/chat/messages_two_stage/resume']);
    } finally {
      await context.close();
      await t.close();
    }
  }, PASS_TIMEOUT_MS);
});
