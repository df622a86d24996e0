import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, BrowserContext, Locator, Page } from 'playwright-core';
import { startApp, type TestApp } from '../support/app';
import { ReplayServer, respond } from '../support/replay-server';
import { sse } from '../support/sse-client';
import { describeBrowser, launchChromium, openPage, screenshot, type PageProblems } from './browser-harness';

/**
 * Issue #30, deliverable 5: what a new user ran into on the chat page and the debug panel, at
 * 1280×800 and on a 420 px screen. Each test runs at both sizes and saves a screenshot of each
 * (test-output/screenshots/usability-*).
 */
const SIZES = [
  { name: '1280', viewport: { width: 1280, height: 800 } },
  { name: '420', viewport: { width: 420, height: 800 } },
] as const;

describeBrowser('chat page and debug panel: first-use problems (issue #30)', () => {
  let llm: ReplayServer;
  let t: TestApp;
  let browser: Browser;
  let context: BrowserContext | undefined;
  let page: Page;
  let problems: PageProblems;

  beforeAll(async () => {
    browser = await launchChromium();
    llm = await ReplayServer.start();
    t = await startApp({ LLM_PROVIDER: 'openai', LLM_BASE_URL: llm.openAiBaseUrl, LLM_MODEL: 'scripted-model', TWO_STAGE_ENABLED: 'true' });
    const project = join(t.workspace, 'default');
    mkdirSync(join(project, 'docs'), { recursive: true });
    writeFileSync(join(project, 'README.md'), '# Demo project\n');
    writeFileSync(join(project, 'docs', 'roadmap.md'), '# Roadmap\n\nThe roadmap for this year: ship the two-stage protocol in Q1, the chat page in Q2.\n');
    const ingest = await fetch(`${t.url}/api/knowledge/ingest`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ projectId: 'default' }) });
    expect(ingest.status).toBeLessThan(300);
  });
  afterAll(async () => {
    await browser?.close();
    await t?.close();
    await llm?.close();
  });
  beforeEach(() => llm.reset());
  afterEach(async () => {
    await context?.close();
    context = undefined;
  });

  const openAt = async (viewport: { width: number; height: number }, url: string) => {
    await context?.close();
    ({ context, page, problems } = await openPage(browser, viewport));
    await page.goto(url);
    await page.waitForFunction(() => document.documentElement.dataset.ready === 'true');
  };
  const send = async (text: string) => {
    await page.fill('#message', text);
    await page.press('#message', 'Enter');
  };
  const waitDone = (n = 1) =>
    page.waitForFunction(
      (k) => {
        const a = document.querySelectorAll('.message.assistant');
        return a.length === k && a[k - 1].querySelector('.status-pill')?.textContent === 'Done';
      },
      n,
      { timeout: 15_000 },
    );
  /** Drawing follows the state by a frame: wait for two. */
  const painted = () => page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
  /**
   * Whether an element is on screen without scrolling and not covered: its box inside the
   * viewport and the element at its centre being it (or inside it).
   */
  const onScreen = async (locator: Locator) => {
    const box = await locator.boundingBox();
    const vp = page.viewportSize()!;
    if (!box) return { visible: false, reason: 'no box' };
    const inside = box.x >= 0 && box.y >= 0 && box.x + box.width <= vp.width && box.y + box.height <= vp.height;
    const hit = await locator.evaluate((e) => {
      const r = e.getBoundingClientRect();
      const top = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
      return !!top && (top === e || e.contains(top));
    });
    const scrolled = await page.evaluate(() => window.scrollY);
    return { visible: inside && hit && scrolled === 0, reason: JSON.stringify({ box, vp, hit, scrolled }) };
  };
  const expectOnScreen = async (locator: Locator) => {
    const r = await onScreen(locator);
    expect(r.reason && r.visible ? 'on screen' : r.reason).toBe('on screen');
  };
  const noHorizontalOverflow = async () => expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(page.viewportSize()!.width);

  it.each(SIZES)('keys on and no key entered ($name px): asks for the key, never says two-stage is off, and the composer stays on screen', async ({ name, viewport }) => {
    const secured = await startApp({ LLM_PROVIDER: 'openai', LLM_BASE_URL: llm.openAiBaseUrl, LLM_MODEL: 'scripted-model', TWO_STAGE_ENABLED: 'true', API_KEYS: 'k-usability-test-1' });
    try {
      await openAt(viewport, `${secured.url}/`);
      expect(problems.errors).toContain('HTTP 401 GET /api/config/capabilities');
      expect(await page.isVisible('#banner')).toBe(true);
      expect(await page.textContent('#banner')).toContain('API key');
      // the route hint says what is missing, not that the server turned two-stage off
      const hint = (await page.textContent('#route-hint')) ?? '';
      expect(hint).not.toMatch(/\boff\b/i);
      expect(hint).toMatch(/API key/);
      expect(await page.textContent('#model-badge')).not.toBe('model unknown');
      // the banner does not push the composer off screen, nor does anything cover it
      await expectOnScreen(page.locator('#send'));
      await expectOnScreen(page.locator('#message'));
      await screenshot(page, `usability-key-needed-${name}`);

      // the banner's button leads to the key field; once saved, the capabilities are read again
      await page.click('#banner button');
      await expectOnScreen(page.locator('#api-key'));
      expect(await page.evaluate(() => document.activeElement?.id)).toBe('api-key');
      await page.fill('#api-key', 'k-usability-test-1');
      await page.click('#api-key-form button[type="submit"]');
      await page.waitForFunction(() => document.getElementById('model-badge')?.textContent === 'openai · scripted-model');
      expect(await page.isHidden('#banner')).toBe(true);
      expect(await page.inputValue('#route')).toBe('two-stage');
      expect(await page.textContent('#route-hint')).toBe('One tool per phase; Pause and Resume work at tool boundaries.');
      await noHorizontalOverflow();
      expect(problems.errors.filter((e) => !e.startsWith('HTTP 401 GET /api/'))).toEqual([]);
    } finally {
      await secured.close();
    }
  });

  it.each(SIZES)('a banner with a long message ($name px) leaves the composer on screen', async ({ name, viewport }) => {
    await openAt(viewport, `${t.url}/`);
    // a conversation that is gone: the page reports it in the banner
    await page.route(/\/api\/chat\/conversations\?/, (route) => route.fulfill({ status: 503, json: { statusCode: 503, error: 'database_unavailable', message: 'The database cannot be reached right now; nothing was stored. Try again in a moment, or ask whoever runs this server to check its database connection.' } }));
    await page.reload();
    await page.waitForFunction(() => document.documentElement.dataset.ready === 'true');
    expect(await page.isVisible('#banner')).toBe(true);
    await expectOnScreen(page.locator('#send'));
    await expectOnScreen(page.locator('#message'));
    await screenshot(page, `usability-long-banner-${name}`);
  });

  it.each(SIZES)('conversation titles ($name px): two that start alike read differently, the full title on hover', async ({ name, viewport }) => {
    const project = `titles-${name}`;
    mkdirSync(join(t.workspace, project), { recursive: true });
    const titles = ['Quarterly roadmap review for the platform team in March', 'Quarterly roadmap review for the platform team in April'];
    for (const title of titles) {
      llm.enqueue(respond.turn([{ text: 'Noted.' }]));
      const turn = await sse(`${t.url}/api/chat/messages`, { body: { projectId: project, content: 'Start a conversation' }, timeoutMs: 10_000 });
      const id = turn.events[0].data.conversationId as string;
      const renamed = await fetch(`${t.url}/api/chat/conversations/${id}`, { method: 'PATCH', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ title }) });
      expect(renamed.status).toBe(200);
    }
    await openAt(viewport, `${t.url}/`);
    if (viewport.width < 760) await page.click('#toggle-sidebar');
    await page.click('#settings summary');
    await page.fill('#project-id', project);
    await page.press('#project-id', 'Tab');
    await page.waitForFunction(() => document.querySelectorAll('#conversation-list .conversation').length === 2, undefined, { timeout: 10_000 });
    await page.click('#settings summary');
    const items = page.locator('#conversation-list .conversation');
    // newest first
    expect(await items.evaluateAll((els) => els.map((e) => e.getAttribute('title')))).toEqual([...titles].reverse());
    const shown = await page.locator('#conversation-list .conversation-title').evaluateAll((els) =>
      els.map((e) => ({ text: e.textContent, clipped: e.scrollWidth > e.clientWidth + 1 || e.scrollHeight > e.clientHeight + 1 })),
    );
    expect(shown).toEqual([...titles].reverse().map((text) => ({ text, clipped: false })));
    await expectOnScreen(items.first());
    await screenshot(page, `usability-titles-${name}`);
    expect(problems.errors).toEqual([]);
  });

  it.each(SIZES)('two-stage ($name px): a knowledge question shows its sources, and steps say what they did', async ({ name, viewport }) => {
    llm.enqueue(respond.turn([{ toolCall: { name: 'rag_query', args: { query: 'roadmap' } } }]), respond.turn([{ text: 'The roadmap is in docs/roadmap.md: the two-stage protocol ships in Q1.' }]));
    await openAt(viewport, `${t.url}/`);
    expect(await page.inputValue('#route')).toBe('two-stage');
    await send('Where is the roadmap?');
    await waitDone();
    await painted();
    const live = page.locator('.message.assistant').last();
    expect(await live.locator('.phase').allTextContents()).toEqual(['1 · Called rag_query', '2 · Ran rag_query', '3 · Answer']);
    const cards = live.locator('.source-card.rag');
    expect(await cards.locator('.source-where').allTextContents()).toContain('docs/roadmap.md');
    expect(await live.locator('.retrieval-metrics [data-metric="returned"]').textContent()).toMatch(/^\d+ returned/);
    await noHorizontalOverflow();
    await screenshot(page, `usability-two-stage-sources-${name}`);

    // reopened, the stored turn shows the same sources and steps
    await page.reload();
    await page.waitForFunction(() => document.documentElement.dataset.ready === 'true' && document.querySelectorAll('.message.assistant').length === 1);
    const stored = page.locator('.message.assistant');
    expect(await stored.locator('.phase').allTextContents()).toEqual(['1 · Called rag_query', '2 · Ran rag_query', '3 · Answer']);
    expect(await stored.locator('.source-card.rag .source-where').allTextContents()).toContain('docs/roadmap.md');
    expect(problems.errors).toEqual([]);
  });

  it('unified: a step that called tools names them; the answer step is "Answer"', async () => {
    llm.enqueue(
      respond.turn([
        { toolCall: { name: 'list_files', args: { path: '.' }, id: 'l1' } },
        { toolCall: { name: 'read_file', args: { path: 'README.md' }, id: 'r1' } },
      ]),
      respond.turn([{ text: 'A README and a docs folder.' }]),
    );
    await openAt(SIZES[0].viewport, `${t.url}/`);
    await page.click('#settings summary');
    await page.selectOption('#route', 'unified');
    await send('What is here?');
    await waitDone();
    await painted();
    expect(await page.locator('.message.live .phase').allTextContents()).toEqual(['1 · Called list_files, read_file', '2 · Ran list_files, read_file', '3 · Answer']);
    expect(problems.errors).toEqual([]);
  });

  it.each(SIZES)('/debug?requestId= ($name px): the trace table is on screen without scrolling', async ({ name, viewport }) => {
    llm.enqueue(respond.turn([{ toolCall: { name: 'list_files', args: {} } }]), respond.turn([{ text: 'One file.' }]));
    const turn = await sse(`${t.url}/api/chat/messages_two_stage`, { body: { content: 'What files?' }, timeoutMs: 10_000 });
    const requestId = turn.events[0].data.requestId as string;
    await openAt(viewport, `${t.url}/debug?requestId=${requestId}`);
    await page.waitForSelector('#trace-rows tr');
    expect(await page.inputValue('#trace-request-id')).toBe(requestId);
    await expectOnScreen(page.locator('#trace-table thead'));
    await expectOnScreen(page.locator('#trace-rows tr').first().locator('td.type'));
    await screenshot(page, `usability-debug-trace-${name}`);
    // the tool-only form is still there, below
    expect(await page.isVisible('#execute-form')).toBe(true);
    await noHorizontalOverflow();
    expect(problems.errors).toEqual([]);
  });
});
