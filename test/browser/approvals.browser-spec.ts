import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { startApp, type TestApp } from '../support/app';
import { ReplayServer, respond } from '../support/replay-server';
import { describeBrowser, launchChromium, openPage, screenshot, type PageProblems } from './browser-harness';

/**
 * Approvals on the chat page (issue #32, item 7), against the real backend: a scripted model
 * calls read_file, which TOOLS_REQUIRE_APPROVAL names; a person approves on one turn (unified
 * route) and denies with a reason on another (two-stage route), and each turn finishes with its
 * answer. After a reload the cards show the decisions and who gave them, drawn from the steps
 * stored with the answers (no request to the approvals route).
 */
const KEY = 'k-approvals-browser-1';

describeBrowser('chat page: approval cards', () => {
  let llm: ReplayServer;
  let t: TestApp;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let problems: PageProblems;

  beforeAll(async () => {
    browser = await launchChromium();
    llm = await ReplayServer.start();
    t = await startApp({ LLM_PROVIDER: 'openai', LLM_BASE_URL: llm.openAiBaseUrl, LLM_MODEL: 'scripted-model', TWO_STAGE_ENABLED: 'true', TOOLS_REQUIRE_APPROVAL: 'read_file', API_KEYS: KEY });
    mkdirSync(join(t.workspace, 'default', 'docs'), { recursive: true });
    writeFileSync(join(t.workspace, 'default', 'docs', 'roadmap.md'), '# Roadmap\nShip it.\n');
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await t?.close();
    await llm?.close();
  });
  beforeEach(async () => {
    llm.reset();
    ({ context, page, problems } = await openPage(browser));
  });
  afterEach(async () => {
    await context?.close();
  });

  const ready = () => page.waitForFunction(() => document.getElementById('model-badge')?.textContent === 'openai · scripted-model', undefined, { timeout: 5_000 });
  const chooseRoute = async (route: 'unified' | 'two-stage') => {
    // the settings fold is open after the API key was entered there: open it either way
    if (!(await page.locator('#route').isVisible())) await page.click('#settings summary');
    await page.selectOption('#route', route, { timeout: 5_000 });
  };
  const send = async (text: string) => {
    await page.fill('#message', text);
    await page.press('#message', 'Enter');
  };
  const waitDone = () => page.waitForFunction(() => document.querySelector('.message.live .status-pill')?.textContent === 'Done', undefined, { timeout: 10_000 });
  /** the card that waits now, fixed by its approval id (it keeps it once decided) */
  const pendingCard = async () => {
    const waiting = page.locator('[data-testid=approval-card][data-status=pending]');
    await waiting.waitFor({ timeout: 10_000 });
    return page.locator(`[data-testid=approval-card][data-approval-id="${await waiting.getAttribute('data-approval-id')}"]`);
  };
  const scriptRead = (answer: string) =>
    llm.enqueue(respond.turn([{ text: 'Let me look at the files first.' }, { toolCall: { name: 'read_file', args: { path: 'docs/roadmap.md' } } }]), respond.turn([{ text: answer }]));
  /** While the call waits: worded as waiting (not "Ran", not running), its text drawn before its row. */
  const expectWaiting = async (card: ReturnType<Page['locator']>) => {
    // the turn being answered (an earlier turn's article keeps its class)
    const live = page.locator('.message.live').last();
    expect(await card.locator('[data-testid=approval-title]').textContent()).toBe('Approval needed: ');
    const phases = await live.locator('.phase').allTextContents();
    expect(phases.filter((p) => p.includes('Ran read_file'))).toEqual([]);
    const row = live.locator('.tool[data-tool="read_file"]');
    expect(await row.locator('.tool-status').textContent()).toBe('waiting for approval');
    expect(await live.locator('.tool-status').allTextContents()).not.toContain('running');
    expect(await live.locator('.status-pill').textContent()).toBe('Waiting for approval');
    await expectTextBeforeRow(live);
    return phases;
  };
  /** "Let me look at the files first." comes before the read_file row it announced. */
  const expectTextBeforeRow = async (turn: ReturnType<Page['locator']>) => {
    const order = await turn.evaluate((root) => {
      const text = [...root.querySelectorAll('.markdown')].find((e) => e.textContent?.includes('Let me look at the files first.'));
      const row = root.querySelector('.tool[data-tool="read_file"]');
      if (!text || !row) return 'missing';
      return text.compareDocumentPosition(row) & Node.DOCUMENT_POSITION_FOLLOWING ? 'text first' : 'row first';
    });
    expect(order).toBe('text first');
  };

  jest.setTimeout(60_000);

  it('approve and deny on the cards finish the turns with their answers; after a reload the cards show the decisions and who gave them', async () => {
    await page.goto(`${t.url}/`);
    await page.click('#banner button', { timeout: 5_000 });
    await page.fill('#api-key', KEY);
    await page.click('#api-key-form button[type="submit"]');
    await ready();

    // unified: the card waits, Approve runs the call and the turn answers with what it read
    await chooseRoute('unified');
    scriptRead('The roadmap says: ship it.');
    await send('What does the roadmap say?');
    const first = await pendingCard();
    expect(await first.locator('[data-testid=approval-tool]').textContent()).toBe('read_file');
    expect(await first.locator('[data-testid=approval-arguments]').textContent()).toContain('docs/roadmap.md');
    expect(llm.chatRequests).toHaveLength(1);
    await expectWaiting(first);
    await screenshot(page.locator('.message.live'), 'approval-card-pending');
    await first.locator('[data-testid=approval-approve]').click();
    await waitDone();
    expect(await first.getAttribute('data-status')).toBe('approved');
    expect(await first.locator('[data-testid=approval-title]').textContent()).toBe('Approved: ');
    expect(await page.locator('.message.live .tool[data-tool="read_file"] .tool-status').textContent()).toBe('done');
    const approvedText = (await first.locator('[data-testid=approval-decision]').textContent()) ?? '';
    expect(approvedText).toMatch(/^Approved by \S+/);
    expect(await page.locator('.message.live .turn-flow').textContent()).toContain('The roadmap says: ship it.');
    await expectTextBeforeRow(page.locator('.message.live'));
    expect(JSON.stringify(llm.chatRequests[1].body.messages)).toContain('Ship it.');

    // two-stage: Deny with a reason; the model hears it and the turn answers anyway
    await chooseRoute('two-stage');
    llm.reset();
    scriptRead('Understood, I will not read it.');
    await send('Read the roadmap again');
    const second = await pendingCard();
    // two-stage: its tool phase says it waits
    expect(await expectWaiting(second)).toContain('2 · Waiting for approval: read_file');
    await screenshot(page.locator('.message.live').last(), 'approval-card-pending-two-stage');
    await second.locator('[data-testid=approval-deny-reason]').fill('not during the freeze');
    await second.locator('[data-testid=approval-deny]').click();
    await waitDone();
    expect(await second.getAttribute('data-status')).toBe('denied');
    expect(await second.locator('[data-testid=approval-title]').textContent()).toBe('Denied: ');
    expect(await page.locator('.message.live').last().locator('.phase').allTextContents()).toContain('2 · Ran read_file');
    const deniedText = (await second.locator('[data-testid=approval-decision]').textContent()) ?? '';
    expect(deniedText).toMatch(/^Denied by \S+: not during the freeze$/);
    expect(JSON.stringify(llm.chatRequests.at(-1)!.body.messages)).toContain('not during the freeze');

    // reloaded: both cards come back decided, named, without buttons, from the stored steps alone
    const approvalRequests: string[] = [];
    page.on('request', (r) => {
      if (/\/approvals(\?|$)/.test(new URL(r.url()).pathname)) approvalRequests.push(r.url());
    });
    await page.reload();
    await page.waitForFunction(() => document.querySelectorAll('[data-testid=approval-card]').length === 2);
    const cards = page.locator('[data-testid=approval-card]');
    expect(await cards.evaluateAll((els) => els.map((e) => e.getAttribute('data-status')))).toEqual(['approved', 'denied']);
    expect(await cards.locator('[data-testid=approval-decision]').allTextContents()).toEqual([approvedText, deniedText]);
    expect(await cards.locator('[data-testid=approval-approve]').evaluateAll((els) => els.filter((e) => (e as HTMLElement).offsetParent !== null).length)).toBe(0);
    expect(approvalRequests).toEqual([]);
    expect(await cards.locator('[data-testid=approval-title]').allTextContents()).toEqual(['Approved: ', 'Denied: ']);
    // the stored turns draw their text and rows in the order they happened, as the live ones did
    for (const turn of await page.locator('.message.assistant').all()) await expectTextBeforeRow(turn);
    await screenshot(page, 'approval-cards-reloaded', true);
    expect(problems.errors.filter((e) => !e.startsWith('HTTP 401 GET /api/'))).toEqual([]);
  });
});
