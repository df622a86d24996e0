import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { startApp, type TestApp } from '../support/app';
import { ReplayServer, respond } from '../support/replay-server';
import { describeBrowser, launchChromium, openPage, screenshot, type PageProblems } from './browser-harness';

/**
 * The chat page shows its work (issue #18, item 5): a failed tool is an error step, the sources
 * panel carries the retrieval's numbers and each web page's fetch status. Real turns through the
 * whole app with a scripted model, plus one scripted stream for what the server may send that
 * no built-in tool triggers on demand (a tool_phase error stage, a mix of fetched pages).
 */
const DOC_IMAGES = join(__dirname, '..', '..', 'docs', 'images');

describeBrowser('chat page: error steps, retrieval metrics, fetch status', () => {
  let llm: ReplayServer;
  let t: TestApp;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let problems: PageProblems;

  beforeAll(async () => {
    browser = await launchChromium();
    llm = await ReplayServer.start();
    t = await startApp({ LLM_PROVIDER: 'openai', LLM_BASE_URL: llm.openAiBaseUrl, LLM_MODEL: 'scripted-model', TWO_STAGE_ENABLED: 'true' });
    mkdirSync(join(t.workspace, 'default', 'docs'), { recursive: true });
  });
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

  const open = async (route: 'unified' | 'two-stage') => {
    await page.goto(`${t.url}/`);
    await page.waitForFunction(() => document.documentElement.dataset.ready === 'true');
    await page.click('#settings summary');
    await page.selectOption('#route', route);
    await page.click('#settings summary');
  };
  const send = async (text: string) => {
    await page.fill('#message', text);
    await page.press('#message', 'Enter');
  };
  const waitDone = () => page.waitForFunction(() => document.querySelector('.message.live .status-pill')?.textContent === 'Done', undefined, { timeout: 15_000 });
  /** A screenshot; with ORION_DOC_IMAGES=1 it also replaces the README's copy in docs/images. */
  const docImage = async (name: string, whole = false) => {
    const path = await screenshot(whole ? page : page.locator('.message.live'), name);
    if (process.env.ORION_DOC_IMAGES !== '1') return;
    mkdirSync(DOC_IMAGES, { recursive: true });
    copyFileSync(path, join(DOC_IMAGES, `${name}.png`));
  };

  it('shows a tool that failed in a real unified turn as an error step, and the page it could not fetch', async () => {
    const blocked = 'http://127.0.0.1:9/private';
    llm.enqueue(respond.turn([{ toolCall: { name: 'fetch_page', args: { url: blocked } } }]), respond.turn([{ text: 'I could not open that page.' }]));
    await open('unified');
    await send('Read http://127.0.0.1:9/private');
    await waitDone();
    const step = page.locator('.message.live .tool.error-step[data-tool="fetch_page"]');
    expect(await step.getAttribute('data-step')).toBe('error');
    expect(await step.locator('.tool-status').textContent()).toBe('error');
    // the tool's own reason, sent by the server in the call's tool_phase error stage
    expect(await step.locator('.tool-error').textContent()).toBe('Refused: http://127.0.0.1:9/private resolves to a loopback address (127.0.0.1)');
    // the page never fetched: a card with its fetch status (it is not a cited source)
    const card = page.locator('.message.live .source-card.fetch-failed');
    expect(await card.locator('.source-title').getAttribute('href')).toBe(blocked);
    expect(await card.locator('.fetch-status').textContent()).toBe('Fetch failed: invalid arguments');
    expect(problems.errors).toEqual([]);
  });

  it('a reloaded conversation draws each old turn exactly as the live turn was drawn: tool steps, error reasons, sources, phases', async () => {
    writeFileSync(join(t.workspace, 'default', 'docs', 'install.md'), '# Installing\n\nRun npm install, then npm start.\n');
    expect((await fetch(`${t.url}/api/knowledge/ingest`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ projectId: 'default' }) })).status).toBeLessThan(300);
    const turns: string[] = [];
    const liveTurn = async (n: number) => {
      await page.waitForFunction((k) => { const a = document.querySelectorAll('.message.assistant'); return a.length === k && a[k - 1].querySelector('.status-pill')?.textContent === 'Done'; }, n, { timeout: 15_000 });
      await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
      turns.push(await page.locator('.message.assistant').nth(n - 1).innerHTML());
    };
    llm.enqueue(
      respond.turn([{ text: 'Looking.' }, { toolCall: { name: 'rag_query', args: { query: 'install' }, id: 'q1' } }]),
      respond.turn([{ toolCall: { name: 'fetch_page', args: { url: 'http://127.0.0.1:9/private' }, id: 'f1' } }]),
      respond.turn([{ text: 'Run **npm install**, then npm start.' }]),
    );
    await open('unified');
    await send('How do I install it?');
    await liveTurn(1);
    writeFileSync(join(t.workspace, 'default', 'README.md'), '# Demo\n');
    llm.enqueue(
      respond.turn([{ toolCall: { name: 'read_file', args: { path: 'README.md' }, id: 'r1' } }]),
      respond.turn([{ toolCall: { name: 'read_file', args: { path: 'README.md' }, id: 'r2' } }]),
      respond.turn([{ text: 'The README says Demo.' }]),
    );
    await send('And the README?');
    await liveTurn(2);

    await page.reload();
    await page.waitForFunction(() => document.documentElement.dataset.ready === 'true' && document.querySelectorAll('.message.assistant').length === 2);
    expect(await page.locator('.message.live').count()).toBe(0);
    const old = page.locator('.message.assistant');
    expect([await old.nth(0).innerHTML(), await old.nth(1).innerHTML()]).toEqual(turns);
    // and what that is: the failed fetch with its reason, the knowledge sources, the refused duplicate
    expect(await old.nth(0).locator('.tool.error-step[data-tool="fetch_page"] .tool-error').textContent()).toContain('loopback');
    expect(await old.nth(0).locator('.source-card.rag').count()).toBeGreaterThan(0);
    expect(await old.nth(1).locator('.tool').allTextContents()).toHaveLength(2);
    expect(await old.nth(1).locator('.notice').count()).toBeGreaterThan(0);
    await screenshot(old.nth(0), 'chat-reloaded-turn');
    expect(problems.errors).toEqual([]);
  });

  it("shows a two-stage turn's failed tool result as an error step, next to a tool that worked", async () => {
    writeFileSync(join(t.workspace, 'default', 'README.md'), '# Demo\n');
    llm.enqueue(
      respond.turn([{ toolCall: { name: 'read_file', args: { path: 'docs' } } }]),
      respond.turn([{ toolCall: { name: 'read_file', args: { path: 'README.md' } } }]),
      respond.turn([{ text: 'The README says Demo.' }]),
    );
    await open('two-stage');
    await send('What does the README say?');
    await waitDone();
    const tools = page.locator('.message.live .tool');
    expect(await tools.count()).toBe(2);
    expect(await tools.nth(0).getAttribute('data-step')).toBe('error');
    expect(await tools.nth(0).locator('.tool-error').textContent()).toBe('"docs" is a folder; use list_files to see what it contains');
    expect(await tools.nth(1).getAttribute('data-step')).toBeNull();
    expect(await tools.nth(1).locator('.tool-status').textContent()).toBe('done');
    await docImage('chat-error-step');
    expect(problems.errors).toEqual([]);
  });

  it('shows the retrieval metrics of a real rag_query turn: returned, used, confidence', async () => {
    writeFileSync(join(t.workspace, 'default', 'docs', 'roadmap.md'), '# Roadmap\n\nThe roadmap: ship the two-stage protocol in Q1, the chat page in Q2.\n');
    const ingest = await fetch(`${t.url}/api/knowledge/ingest`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ projectId: 'default' }) });
    expect(ingest.status).toBeLessThan(300);
    const search = (await (await fetch(`${t.url}/api/knowledge/search?projectId=default&q=roadmap`)).json()) as { metrics?: { returned: number; candidates: number } };
    llm.enqueue(respond.turn([{ toolCall: { name: 'rag_query', args: { query: 'roadmap' } } }]), respond.turn([{ text: 'See docs/roadmap.md.' }]));
    await open('unified');
    await send('Where is the roadmap?');
    await waitDone();
    const line = page.locator('.message.live .retrieval-metrics');
    const cards = await page.locator('.message.live .source-card.rag').count();
    expect(cards).toBeGreaterThan(0);
    const returned = await line.locator('[data-metric="returned"]').textContent();
    expect(returned).toMatch(/^\d+ returned \(of \d+\)$/);
    if (search.metrics) expect(returned).toBe(`${search.metrics.returned} returned (of ${search.metrics.candidates})`);
    expect(await line.locator('[data-metric="used"]').textContent()).toBe(`${cards} used`);
    expect(await line.locator('[data-metric="confidence"]').textContent()).toMatch(/^(High|Medium|Low|None) confidence$/);
    expect(problems.errors).toEqual([]);
  });

  it("shows a tool_phase error stage as an error step, and each web source's fetch status", async () => {
    const ids = { requestId: '33333333-3333-4333-8333-333333333333', projectId: 'default', conversationId: '44444444-4444-4444-8444-444444444444' };
    const events: Array<[string, string, Record<string, unknown>]> = [
      ['start', 'action_phase', { protocol: 'unified', userMessageId: null }],
      ['tool_calls', 'action_phase', { calls: [{ id: 'k', name: 'rag_query', arguments: '{"query":"pricing"}' }, { id: 's', name: 'web_search', arguments: '{"query":"pricing"}' }] }],
      ['tool_progress', 'tool_phase', { tool: 'rag_query', callId: 'k', action: 'completed', params: { query: 'pricing' }, isError: false, outcome: 'success' }],
      ['tool_progress', 'tool_phase', { tool: 'web_search', callId: 's', action: 'calling', params: { query: 'pricing' }, isError: false }],
      ['tool_phase', 'tool_phase', { toolId: 'web_search', stage: 'searching', message: 'Searching the web…' }],
      ['tool_phase', 'tool_phase', { toolId: 'web_search', stage: 'error', message: 'SearXNG answered HTTP 502' }],
      ['tool_progress', 'tool_phase', { tool: 'web_search', callId: 's', action: 'failed', params: { query: 'pricing' }, isError: true, outcome: 'unavailable' }],
      ['tool_progress', 'tool_phase', { tool: 'fetch_page', callId: 'f1', action: 'completed', params: { url: 'https://docs.example.com/pricing' }, isError: false, outcome: 'success' }],
      ['tool_progress', 'tool_phase', { tool: 'fetch_page', callId: 'f2', action: 'failed', params: { url: 'https://slow.example.org/plans' }, isError: true, outcome: 'timeout' }],
      ['chunk', 'action_phase', { content: 'Pricing starts at 10 € a month.' }],
      [
        'sources',
        'action_phase',
        {
          data: [
            { type: 'rag', title: 'Pricing notes', path: 'docs/pricing.md', snippet: 'Plans and prices', score: 0.82, confidence: 'medium' },
            { type: 'web', title: 'Pricing', url: 'https://docs.example.com/pricing', snippet: 'Plans start at 10 €' },
            { type: 'web', title: 'Forum thread', url: 'https://forum.example.net/t/42', snippet: 'From a search result' },
          ],
          sourceTypes: ['rag', 'web'],
          ragCount: 1,
          webCount: 2,
          confidence: 'medium',
          metrics: { method: 'fts', candidates: 9, returned: 4, latencyMs: 3, topScore: 0.82 },
        },
      ],
      ['done', 'complete', { fullContent: 'Pricing starts at 10 € a month.', messageId: null, stopReason: 'final_answer', usage: {} }],
    ];
    const body = events.map(([event, phase, data], i) => `id: ${i + 1}\nevent: ${event}\ndata: ${JSON.stringify({ ...ids, seq: i + 1, phase, phaseIndex: 1, cycleIndex: 0, ...data })}\n\n`).join('');
    await page.route('**/api/chat/messages', (route) => route.fulfill({ status: 200, headers: { 'content-type': 'text/event-stream' }, body }));
    await page.route(`**/api/chat/conversations/${ids.conversationId}/**`, (route) => route.fulfill({ status: 200, json: {} }));
    await open('unified');
    await send('What does it cost?');
    await waitDone();

    const live = page.locator('.message.live');
    const search = live.locator('.tool[data-tool="web_search"]');
    expect(await search.getAttribute('data-step')).toBe('error');
    expect(await search.locator('.tool-error').textContent()).toBe('SearXNG answered HTTP 502');
    expect(await live.locator('.tool.error-step').count()).toBe(2); // web_search and the failed fetch
    expect(await live.locator('.tool[data-tool="rag_query"]').getAttribute('data-step')).toBeNull();

    expect(await live.locator('.retrieval-metrics .retrieval-metric').allTextContents()).toEqual(['4 returned (of 9)', '1 used', 'Medium confidence']);
    const web = live.locator('.source-section.web .source-card');
    expect(await web.locator('.source-title').allTextContents()).toEqual(['Pricing', 'Forum thread', 'slow.example.org']);
    expect(await web.locator('.fetch-status').allTextContents()).toEqual(['Fetched', 'Search result, not fetched', 'Fetch failed: timed out']);
    expect(await live.locator('.source-section-heading').allTextContents()).toEqual(['Knowledge base (1)', 'Web (3)']);
    expect(await live.locator('.sources-heading').textContent()).toBe('Sources (3)Medium confidence'); // the failed page is not a source
    await page.setViewportSize({ width: 1280, height: 1100 });
    await docImage('chat-sources-metrics');
    await docImage('chat-page', true);
    expect(problems.errors).toEqual([]);
  });
});
