import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page, Request } from 'playwright-core';
import { startApp, type TestApp } from '../support/app';
import { ReplayServer, respond } from '../support/replay-server';
import { describeBrowser, launchChromium, openPage, screenshot, unlabeledControls, type PageProblems } from './browser-harness';
import { waitFor } from '../support/wait-for';

/**
 * Issue #7, the chat page at `/` in headless Chromium against the whole app, with a local
 * provider server playing scripted (and deliberately slow) model turns.
 */
describeBrowser('chat page (/) in headless Chromium', () => {
  let llm: ReplayServer;
  let t: TestApp;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let problems: PageProblems;

  beforeAll(async () => {
    // one at a time, so that afterAll can close whatever did start
    browser = await launchChromium();
    llm = await ReplayServer.start();
    t = await startApp({ LLM_PROVIDER: 'openai', LLM_BASE_URL: llm.openAiBaseUrl, LLM_MODEL: 'scripted-model', TWO_STAGE_ENABLED: 'true' });
    const project = join(t.workspace, 'default');
    mkdirSync(join(project, 'docs'), { recursive: true });
    writeFileSync(join(project, 'README.md'), '# Demo project\n');
    writeFileSync(join(project, 'docs', 'roadmap.md'), '# Roadmap\n');
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

  const open = async (path = '/') => {
    await page.goto(`${t.url}${path}`);
    await page.waitForFunction(() => document.documentElement.dataset.ready === 'true');
  };
  const send = async (text: string) => {
    await page.fill('#message', text);
    await page.press('#message', 'Enter');
  };
  const state = () => page.evaluate(() => (window as any).__orion?.state() ?? null).catch(() => null); // null while navigating
  /** Polls the page's turn state from here: the page's CSP forbids the eval a string predicate would need. */
  const waitForState = async (predicate: (s: any) => boolean, timeout = 15_000) => {
    let last: any = null;
    try {
      return await waitFor(
        async () => {
          last = await state();
          return last && predicate(last) ? last : null;
        },
        { timeoutMs: timeout, intervalMs: 40, what: 'the turn state' },
      );
    } catch (e) {
      throw new Error(`${(e as Error).message}; last: ${JSON.stringify(last && { status: last.status, content: last.content, error: last.error })}`);
    }
  };
  const words = (n: number, prefix = 'w') => Array.from({ length: n }, (_, i) => ({ text: `${prefix}${i + 1} ` }));
  const storedAnswer = async (conversationId: string, requestId: string) => {
    const msgs = (await (await fetch(`${t.url}/api/chat/conversations/${conversationId}/messages`)).json()) as Array<{ role: string; requestId: string; content: string; status: string }>;
    return msgs.filter((m) => m.role === 'assistant' && m.requestId === requestId);
  };
  const chatPosts = (requests: Request[]) => requests.filter((r) => r.method() === 'POST' && r.url().includes('/api/chat/messages'));

  it('sends a message and streams the answer with its phases and tool activity (two-stage route)', async () => {
    llm.enqueue(
      respond.turn([{ text: 'Let me look at the files. ' }, { toolCall: { name: 'list_files', args: { path: '.' } } }], { faults: { delayMs: 60 } }),
      respond.turn([{ text: 'The project has ' }, { text: '**two** entries:\n\n' }, { text: '- `README.md`\n' }, { text: '- `docs/`\n' }], { faults: { delayMs: 100 } }),
    );
    const requests: Request[] = [];
    page.on('request', (r) => requests.push(r));
    await open();
    expect(await unlabeledControls(page)).toEqual([]);
    expect(await page.inputValue('#route')).toBe('two-stage');
    await send('What is in this project?');

    // streaming: text arrives while the turn is still running, the status line names the phase
    await waitForState((s) => s.status === 'streaming' && s.content.includes('The project has'));
    expect(await page.textContent('#turn-status')).toMatch(/Streaming · phase 3: Answering · tool cycle 1/);
    await screenshot(page, 'chat-streaming');

    await waitForState((s) => s.status === 'done');
    const s = await state();
    expect(s.content).toBe('Let me look at the files. \n\nThe project has **two** entries:\n\n- `README.md`\n- `docs/`\n');
    expect(s.phases.map((p: { phaseIndex: number; phase: string }) => `${p.phaseIndex}:${p.phase}`)).toEqual(['1:action_phase', '2:tool_phase', '3:action_phase']);
    expect(await page.locator('.message.live .phase').allTextContents()).toEqual(['1 · Called list_files', '2 · Ran list_files', '3 · Answer']);
    // tool activity: the name and its status, never its raw output
    const tool = page.locator('.message.live .tool');
    expect(await tool.locator('.tool-name').textContent()).toBe('list_files');
    expect(await tool.locator('.tool-status').textContent()).toBe('done');
    expect(await tool.locator('.tool-output').count()).toBe(0);
    // rendered as Markdown
    expect(await page.locator('.message.live .markdown strong').textContent()).toBe('two');
    expect(await page.locator('.message.live .markdown li').count()).toBe(2);
    await page.waitForFunction((t) => document.querySelector('.message.live .status-pill')?.textContent === t, 'Done', { timeout: 5_000 }); // rendering may lag the state by a frame
    expect(await page.textContent('#turn-status')).toBe('Done');
    await page.waitForFunction(() => !(document.getElementById('send') as HTMLButtonElement).disabled, undefined, { timeout: 5_000 });
    await page.waitForSelector('#stop', { state: 'hidden', timeout: 5_000 });

    // the request: the two-stage route, detached so that a dropped connection does not cancel it
    const post = chatPosts(requests);
    expect(post).toHaveLength(1);
    expect(new URL(post[0].url()).pathname).toBe('/api/chat/messages_two_stage');
    expect(post[0].postDataJSON()).toMatchObject({ projectId: 'default', content: 'What is in this project?', mode: 'act', options: { detach: true, debugShowToolResults: false } });

    // the conversation was created, selected and listed; the answer stored is the one shown
    expect(new URL(page.url()).searchParams.get('c')).toBe(s.conversationId);
    await page.waitForSelector('.conversation[aria-current="true"]');
    expect(await page.textContent('.conversation[aria-current="true"] .conversation-title')).toBe('What is in this project?');
    const stored = await storedAnswer(s.conversationId, s.requestId);
    expect(stored).toEqual([expect.objectContaining({ content: s.content, status: 'complete' })]);
    expect({ duplicates: s.duplicates, gaps: s.gaps, mismatch: s.contentMismatch }).toEqual({ duplicates: 0, gaps: 0, mismatch: false });
    await screenshot(page, 'chat-done');

    // a second message continues the same conversation; reopening it shows both turns
    llm.enqueue(respond.turn([{ text: 'You are welcome.' }]));
    await send('Thanks!');
    await waitForState((s) => s.status === 'done' && s.content === 'You are welcome.');
    expect(chatPosts(requests)[1].postDataJSON()).toMatchObject({ conversationId: s.conversationId });
    await open(`/?c=${s.conversationId}`);
    expect(await page.locator('.message.user').allTextContents()).toEqual(['What is in this project?', 'Thanks!']);
    expect(await page.locator('.message.assistant').count()).toBe(2);
    expect(problems.errors).toEqual([]);
  });

  it('shows raw tool output only when "Show tool outputs" is on (debugShowToolResults)', async () => {
    llm.enqueue(respond.turn([{ toolCall: { name: 'list_files', args: {} } }]), respond.turn([{ text: 'Two entries.' }]));
    const requests: Request[] = [];
    page.on('request', (r) => requests.push(r));
    await open();
    await page.click('#settings summary');
    await page.check('#show-tool-outputs');
    await send('List the files');
    await waitForState((s) => s.status === 'done');
    expect(chatPosts(requests)[0].postDataJSON().options).toMatchObject({ debugShowToolResults: true });
    const output = page.locator('.message.live .tool .tool-output');
    await output.locator('summary').click();
    expect(await output.locator('pre').textContent()).toContain('README.md');
    expect(problems.errors).toEqual([]);
  });

  it('stops a slow turn with Stop (cancel): the partial answer stays, the run is cancelled', async () => {
    llm.enqueue(respond.turn(words(40), { faults: { delayMs: 150 } }));
    await open();
    await send('Count slowly');
    await waitForState((s) => s.content.includes('w2 '));
    expect(await page.isVisible('#stop')).toBe(true);
    await page.click('#stop');
    await waitForState((s) => s.status === 'stopped', 10_000);
    const s = await state();
    expect(s.stopReason).toBe('cancelled');
    expect(s.content).toMatch(/^w1 w2 /);
    expect(s.content).not.toContain('w40');
    await page.waitForFunction((t) => document.querySelector('.message.live .status-pill')?.textContent === t, 'Stopped', { timeout: 5_000 }); // rendering may lag the state by a frame
    await page.waitForSelector('#stop', { state: 'hidden', timeout: 5_000 });
    await page.waitForFunction(() => !(document.getElementById('send') as HTMLButtonElement).disabled, undefined, { timeout: 5_000 });
    const run = await (await fetch(`${t.url}/api/chat/runs/${s.requestId}`)).json();
    expect(run.status).toBe('cancelled');
    expect(await storedAnswer(s.conversationId, s.requestId)).toEqual([expect.objectContaining({ content: s.content, status: 'cancelled' })]);
    await screenshot(page, 'chat-stopped');
    expect(problems.errors).toEqual([]);
  });

  it('offers no Pause during a unified turn (only two-stage runs pause): Stop only', async () => {
    llm.enqueue(respond.turn(words(30), { faults: { delayMs: 150 } }));
    await open();
    await page.click('#settings summary');
    await page.selectOption('#route', 'unified');
    // every moment of the turn, from the send on: the button's hidden attribute as it changes
    await page.evaluate(() => {
      const pause = document.getElementById('pause')!;
      const seen: boolean[] = [pause.hasAttribute('hidden')];
      (window as any).__pauseSeen = seen;
      new MutationObserver(() => seen.push(pause.hasAttribute('hidden'))).observe(pause, { attributes: true, attributeFilter: ['hidden'] });
    });
    await send('Count slowly');
    await waitForState((s) => s.content.includes('w2 '));
    expect((await state()).protocol).toBe('unified');
    expect([await page.isVisible('#stop'), await page.isVisible('#pause')]).toEqual([true, false]);
    await page.click('#stop');
    await waitForState((s) => s.status === 'stopped', 10_000);
    expect(await page.evaluate(() => (window as any).__pauseSeen)).not.toContain(false);
    expect(problems.errors).toEqual([]);
  });

  it('pauses at the next tool boundary and resumes to the full answer', async () => {
    llm.enqueue(
      respond.turn([{ text: 'Checking the files. ' }, { toolCall: { name: 'list_files', args: {} } }], { faults: { delayMs: 150 } }),
      respond.turn([{ text: 'There is a README ' }, { text: 'and a docs folder.' }], { faults: { delayMs: 100 } }),
    );
    await open();
    await send('What files are there?');
    await waitForState((s) => s.content.includes('Checking'));
    await page.click('#pause');
    expect(await page.textContent('#pause')).toBe('Pausing…');
    await waitForState((s) => s.status === 'paused', 10_000);
    let s = await state();
    expect(s.resumeFromPhaseIndex).toBe(2);
    await page.waitForSelector('#resume', { state: 'visible', timeout: 5_000 });
    await page.waitForSelector('#pause', { state: 'hidden', timeout: 5_000 });
    expect(await page.textContent('#turn-status')).toContain('Paused after phase 2');
    const run = await (await fetch(`${t.url}/api/chat/runs/${s.requestId}`)).json();
    expect(run.status).toBe('paused');
    await screenshot(page, 'chat-paused');

    // a reload finds the paused run again (replayed through the events route) and can resume it
    await page.reload();
    await page.waitForFunction(() => document.documentElement.dataset.ready === 'true');
    await waitForState((x) => x.status === 'paused');
    await page.waitForSelector('#resume', { state: 'visible', timeout: 5_000 });
    expect((await state()).content).toBe('Checking the files. ');

    await page.click('#resume');
    await waitForState((s) => s.status === 'done');
    s = await state();
    expect(s.content).toBe('Checking the files. There is a README and a docs folder.');
    expect(s.phases.map((p: { phase: string }) => p.phase)).toEqual(['action_phase', 'tool_phase', 'action_phase']);
    expect({ duplicates: s.duplicates, gaps: s.gaps, mismatch: s.contentMismatch }).toEqual({ duplicates: 0, gaps: 0, mismatch: false });
    expect(await storedAnswer(s.conversationId, s.requestId)).toEqual([expect.objectContaining({ content: s.content, status: 'complete' })]);
    expect(problems.errors).toEqual([]);
  });

  it('a paused run cancelled elsewhere is over: Resume is refused (409 run_cancelled) and no longer offered, nothing is forked', async () => {
    llm.enqueue(respond.turn([{ text: 'Checking the files. ' }, { toolCall: { name: 'list_files', args: {} } }], { faults: { delayMs: 150 } }));
    await open();
    await send('What files are there?');
    await waitForState((s) => s.content.includes('Checking'));
    await page.click('#pause');
    await waitForState((s) => s.status === 'paused', 10_000);
    await page.waitForSelector('#resume', { state: 'visible', timeout: 5_000 });
    const { requestId, conversationId } = await state();

    // another client (another tab, another device) presses Stop on the paused run
    expect((await fetch(`${t.url}/api/chat/runs/${requestId}/cancel`, { method: 'POST' })).status).toBe(202);
    const sent = llm.chatRequests.length;
    await page.click('#resume');
    const s = await waitForState((x) => x.status === 'stopped', 10_000);
    expect(s).toMatchObject({ stopReason: 'cancelled', error: { code: 'run_cancelled' } });
    await page.waitForSelector('#resume', { state: 'hidden', timeout: 5_000 });
    await page.waitForFunction(() => !(document.getElementById('send') as HTMLButtonElement).disabled, undefined, { timeout: 5_000 });
    expect(await page.textContent('.message.live .turn-error')).toContain('cancelled');
    // the run stays cancelled, with no fork and no model call
    expect(await (await fetch(`${t.url}/api/chat/runs/${requestId}`)).json()).toMatchObject({ status: 'cancelled', forks: [] });
    expect(llm.chatRequests.length).toBe(sent);
    expect(await storedAnswer(conversationId, requestId)).toEqual([expect.objectContaining({ content: 'Checking the files. ', status: 'cancelled' })]);
    expect(problems.errors).toEqual(['HTTP 409 POST /api/chat/messages_two_stage/resume']);
  });

  it('reconnects by itself after the connection drops mid-turn and shows the whole answer once', async () => {
    const answer = words(16, 'part');
    llm.enqueue(respond.turn(answer, { faults: { delayMs: 100 } }));
    const eventsRequests: string[] = [];
    page.on('request', (r) => {
      if (r.url().includes('/events')) eventsRequests.push(r.url());
    });
    await open();
    await send('Stream something long');
    await waitForState((s) => s.content.includes('part3 '));
    // the network goes away and the open stream breaks
    await context.setOffline(true);
    await page.evaluate(() => (window as any).__orion.dropConnection());
    await waitForState((s) => s.status === 'reconnecting' && s.reconnectAttempts >= 2, 10_000);
    expect(await page.textContent('#turn-status')).toMatch(/Connection lost — reconnecting/);
    await screenshot(page, 'chat-reconnecting');
    await context.setOffline(false);

    await waitForState((s) => s.status === 'done', 20_000);
    const s = await state();
    expect(s.content).toBe(answer.map((w) => w.text).join(''));
    expect({ gaps: s.gaps, mismatch: s.contentMismatch }).toEqual({ gaps: 0, mismatch: false });
    expect(eventsRequests.length).toBeGreaterThan(0);
    const last = new URL(eventsRequests.at(-1)!);
    expect(last.pathname).toBe(`/api/chat/runs/${s.requestId}/events`);
    expect(Number(last.searchParams.get('lastEventId'))).toBeGreaterThan(0);
    expect(await page.locator('.message.live .markdown').textContent()).toContain('part16');
    expect(await storedAnswer(s.conversationId, s.requestId)).toEqual([expect.objectContaining({ content: s.content, status: 'complete' })]);
    // failed fetches while offline are logged by Chromium; nothing else may be
    expect(problems.errors.filter((e) => !/ERR_INTERNET_DISCONNECTED|Failed to fetch|net::/.test(e))).toEqual([]);
  });

  it('follows a running turn again after the page is reloaded', async () => {
    const answer = words(12, 'r');
    llm.enqueue(respond.turn(answer, { faults: { delayMs: 100 } }));
    await open();
    await send('Keep going after a reload');
    await waitForState((s) => s.content.includes('r2 ') && !!s.conversationId);
    await page.reload();
    await page.waitForFunction(() => document.documentElement.dataset.ready === 'true');
    await waitForState((s) => s.status === 'done', 15_000);
    const s = await state();
    expect(s.content).toBe(answer.map((w) => w.text).join(''));
    expect(await page.locator('.message.user').allTextContents()).toEqual(['Keep going after a reload']);
    expect(problems.errors).toEqual([]);
  });

  it('renders sources by kind and sanitized Markdown under a CSP that blocks scripts and outside images (unified route)', async () => {
    // a second local server plays a tracker: any request it gets is an image that loaded
    const tracked: string[] = [];
    const tracker: Server = createServer((req, res) => {
      tracked.push(req.url ?? '');
      res.writeHead(200, { 'content-type': 'image/png' }).end();
    });
    await new Promise<void>((r) => tracker.listen(0, '127.0.0.1', r));
    const px = `http://127.0.0.1:${(tracker.address() as AddressInfo).port}`;
    try {
      const requests: Request[] = [];
      page.on('request', (r) => requests.push(r));
      // the unified route is scripted here: its real sources arrive with issue #5
      const ids = { requestId: '11111111-1111-4111-8111-111111111111', projectId: 'default', conversationId: '22222222-2222-4222-8222-222222222222' };
      const markdown = [
        '## Findings',
        'Safe **bold** and a [link](https://example.com/doc).',
        `<script>window.__pwned = 'script'</script>`,
        `<img src="${px}/raw.png" onerror="window.__pwned = 'onerror'">`,
        `![pixel](${px}/markdown.png)`,
        '[bad](javascript:window.__pwned=1)',
        '| a | b |\n|---|---|\n| 1 | 2 |',
      ].join('\n\n');
      const sources = {
        data: [
          { type: 'rag', title: 'Roadmap', path: 'docs/roadmap.md', snippet: 'Q1: ship the two-stage protocol.', score: 0.91, confidence: 'high' },
          { type: 'rag', title: 'README', path: 'README.md', snippet: 'Demo project', score: 0.42, confidence: 'medium' },
          { type: 'web', title: 'Example article', url: 'https://example.com/article', snippet: 'From the web', score: 0.18 },
        ],
        sourceTypes: ['rag', 'web'],
        ragCount: 2,
        webCount: 1,
        confidence: 'medium',
      };
      const events: Array<[string, Record<string, unknown>]> = [
        ['start', { protocol: 'unified', userMessageId: null }],
        ['phase', { status: 'start', phase: 'action_phase', phaseIndex: 1, cycleIndex: 0 }],
        ['chunk', { content: markdown }],
        ['sources', sources],
        ['phase', { status: 'end', phase: 'action_phase', phaseIndex: 1, cycleIndex: 0, reason: 'final_answer' }],
        ['done', { fullContent: markdown, messageId: null, stopReason: 'final_answer', usage: {} }],
      ];
      const body = events
        .map(([event, data], i) => `id: ${i + 1}\nevent: ${event}\ndata: ${JSON.stringify({ ...ids, seq: i + 1, phase: event === 'done' ? 'complete' : 'action_phase', phaseIndex: 1, cycleIndex: 0, ...data })}\n\n`)
        .join('');
      await page.route('**/api/chat/messages', (route) => route.fulfill({ status: 200, headers: { 'content-type': 'text/event-stream' }, body }));
      await page.route(`**/api/chat/conversations/${ids.conversationId}/**`, (route) => route.fulfill({ status: 200, json: {} }));

      const response = await page.goto(`${t.url}/`);
      const csp = response!.headers()['content-security-policy'];
      expect(csp).toContain("script-src 'self'");
      expect(csp).toContain("img-src 'self' data:");
      expect(csp).toContain("object-src 'none'");
      expect(csp).toContain("base-uri 'none'");
      expect(csp).toContain("frame-ancestors 'none'");
      expect(csp).toContain("connect-src 'self'");
      expect(csp).toContain("style-src 'self'");
      await page.waitForFunction(() => document.documentElement.dataset.ready === 'true');
      // one setting flips the route
      await page.click('#settings summary');
      await page.selectOption('#route', 'unified');
      await send('Summarize the roadmap');
      await waitForState((s) => s.status === 'done');
      expect(new URL(chatPosts(requests)[0].url()).pathname).toBe('/api/chat/messages');

      // sources: two sections with counts, a card per source with its confidence
      expect(await page.locator('.sources-heading').textContent()).toBe('Sources (3)Medium confidence');
      expect(await page.locator('.source-section-heading').allTextContents()).toEqual(['Knowledge base (2)', 'Web (1)']);
      const rag = page.locator('.source-section.rag .source-card');
      expect(await rag.locator('.source-title').allTextContents()).toEqual(['Roadmap', 'README']);
      expect(await rag.locator('.confidence').allTextContents()).toEqual(['High', 'Medium']);
      expect(await rag.first().locator('.source-where').textContent()).toBe('docs/roadmap.md');
      expect(await rag.first().locator('.source-score').textContent()).toBe('score 0.91');
      const web = page.locator('.source-section.web .source-card');
      expect(await web.locator('a.source-title').getAttribute('href')).toBe('https://example.com/article');
      expect(await web.locator('.source-where').textContent()).toBe('example.com');
      expect(await web.locator('.confidence').count()).toBe(0);

      // Markdown rendered, everything active stripped, no outside image requested
      const md = page.locator('.message.live .markdown');
      expect(await md.locator('h2').textContent()).toBe('Findings');
      expect(await md.locator('table td').allTextContents()).toEqual(['1', '2']);
      expect(await md.locator('script').count()).toBe(0);
      expect(await md.locator('[onerror]').count()).toBe(0);
      expect(await md.locator('img[src]').count()).toBe(0);
      expect(await md.locator('a', { hasText: 'link' }).getAttribute('rel')).toContain('noopener');
      expect(await md.locator('a', { hasText: 'bad' }).getAttribute('href')).toBeNull();
      expect(await page.evaluate(() => (window as any).__pwned)).toBeUndefined();
      expect(await md.locator('.blocked-image').allTextContents()).toEqual([`[image not loaded: ${px}/raw.png]`, '[image not loaded: pixel]']);
      await screenshot(page, 'chat-sources');
      await page.setViewportSize({ width: 1280, height: 1200 }); // the whole answer in view
      await screenshot(page.locator('.message.live'), 'chat-sources-card');

      // the CSP on its own: an outside image and an inline script added behind the sanitizer's back
      await page.evaluate((src) => {
        const seen: string[] = ((window as any).__cspSeen = []);
        document.addEventListener('securitypolicyviolation', (e) => seen.push(e.violatedDirective));
        const img = document.createElement('img');
        img.src = `${src}/csp.png`;
        document.body.append(img);
        const s = document.createElement('script');
        s.textContent = "window.__pwned = 'inline'";
        document.body.append(s);
      }, px);
      // the browser reports violations asynchronously: wait for both reports, then look
      await waitFor(async () => ((await page.evaluate(() => (window as any).__cspSeen)) as string[]).length >= 2, { what: 'the page to report two CSP violations' });
      const violations = await page.evaluate(() => ({ seen: (window as any).__cspSeen as string[], pwned: (window as any).__pwned }));
      expect(violations.pwned).toBeUndefined();
      expect(violations.seen).toEqual(expect.arrayContaining(['img-src', 'script-src-elem']));
      expect(tracked).toEqual([]);
      expect(problems.errors.filter((e) => !/Content Security Policy/.test(e))).toEqual([]);
    } finally {
      await new Promise((r) => tracker.close(r));
    }
  });

  it('shows the knowledge-base sources of a real unified turn that called rag_query', async () => {
    writeFileSync(join(t.workspace, 'default', 'docs', 'roadmap.md'), '# Roadmap\n\nThe roadmap for this year: ship the two-stage protocol in Q1, the chat page in Q2.\n');
    const ingest = await fetch(`${t.url}/api/knowledge/ingest`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ projectId: 'default' }) });
    expect(ingest.status).toBeLessThan(300);
    llm.enqueue(respond.turn([{ toolCall: { name: 'rag_query', args: { query: 'roadmap' } } }]), respond.turn([{ text: 'The roadmap is in docs/roadmap.md.' }]));
    await open();
    await page.click('#settings summary');
    await page.selectOption('#route', 'unified');
    await send('Where is the roadmap?');
    await waitForState((s) => s.status === 'done');
    const s = await state();
    expect(s.protocol).toBe('unified');
    expect(s.tools.map((x: { name: string; status: string }) => `${x.name}:${x.status}`)).toContain('rag_query:completed');
    expect(await page.locator('.source-section-heading').count()).toBe(0); // one kind: one list
    const cards = page.locator('.message.live .source-card.rag');
    expect(await cards.count()).toBeGreaterThan(0);
    expect(await cards.locator('.source-where').allTextContents()).toContain('docs/roadmap.md');
    expect(await cards.first().locator('.confidence').textContent()).toMatch(/^(High|Medium|Low)$/);
    await screenshot(page.locator('.message.live'), 'chat-rag-sources');
    expect(problems.errors).toEqual([]);
  });

  it('a unified turn without sources: no confidence anywhere ("None confidence" is never drawn), and its sources event says none', async () => {
    await open();
    await page.click('#settings summary');
    await page.selectOption('#route', 'unified');
    // a tool-free turn: its sources event, as the page got it
    llm.enqueue(respond.turn([{ text: 'Hello there.' }]));
    await send('Say hello');
    const first = await waitForState((s) => s.status === 'done');
    expect(first.sources).toMatchObject({ data: [], confidence: 'none', metrics: null });
    // a rag_query that finds nothing (the knowledge base has no such text)
    llm.enqueue(respond.turn([{ toolCall: { name: 'rag_query', args: { query: 'zebra migration patterns' } } }]), respond.turn([{ text: 'Nothing about zebras.' }]));
    await send('What do the docs say about zebra migration?');
    const second = await waitForState((s) => s.status === 'done' && s.content === 'Nothing about zebras.');
    expect(second.sources).toMatchObject({ data: [], confidence: 'none' });
    const text = (await page.locator('#messages').innerText()).toLowerCase();
    expect(text).not.toContain('none confidence');
    expect(await page.locator('.confidence').count()).toBe(0);
    // the rag turn says what its retrieval found instead
    expect(await page.locator('.message.live .retrieval-metric[data-metric="confidence"]').textContent()).toBe('nothing relevant found');
    expect(problems.errors).toEqual([]);
  });

  it('has an Agentic mode switch per conversation, disabled with the reason when the model cannot call tools', async () => {
    llm.enqueue(respond.turn([{ text: 'Hello.' }]));
    await open();
    await page.click('#settings summary');
    await page.selectOption('#route', 'unified');
    // a new conversation: nothing to set yet
    expect(await page.isDisabled('#agentic')).toBe(true);
    expect(await page.textContent('#agentic-hint')).toContain('server default');
    await send('Hi');
    await waitForState((s) => s.status === 'done');
    const { conversationId } = await state();
    expect(await page.isEnabled('#agentic')).toBe(true);
    expect(await page.isChecked('#agentic')).toBe(true);
    const patch = page.waitForResponse((r) => r.url().endsWith(`/api/chat/conversations/${conversationId}/settings`) && r.request().method() === 'PATCH');
    await page.locator('label.switch').click();
    expect((await patch).status()).toBe(200);
    expect(await page.isChecked('#agentic')).toBe(false);
    const list = (await (await fetch(`${t.url}/api/chat/conversations?projectId=default`)).json()) as Array<{ id: string; settings: { orchestratorEnabled?: boolean } }>;
    expect(list.find((c) => c.id === conversationId)!.settings.orchestratorEnabled).toBe(false);
    // reloaded, the conversation keeps its setting
    await open(`/?c=${conversationId}`);
    expect(await page.isChecked('#agentic')).toBe(false);
    expect(await page.textContent('#agentic-hint')).toBe('Set for this conversation.');

    // a model without tool calling: the switch is off, disabled, and says why
    await page.route('**/api/config/capabilities', (route) =>
      route.fulfill({ json: { provider: 'openai', model: 'tiny-model', toolCalling: false, orchestratorAvailable: false, orchestratorEnabled: true, twoStageEnabled: false } }),
    );
    await open(`/?c=${conversationId}`);
    expect(await page.isDisabled('#agentic')).toBe(true);
    expect(await page.textContent('#agentic-hint')).toBe('Unavailable: the model tiny-model cannot call tools.');
    expect(await page.isDisabled('#route option[value="two-stage"]')).toBe(true);
    expect(await page.inputValue('#route')).toBe('unified');
    expect(problems.errors).toEqual([]);
  });

  it('works on a narrow screen: the conversation list opens from the top bar', async () => {
    await context.close();
    ({ context, page, problems } = await openPage(browser, { width: 390, height: 844 }));
    llm.enqueue(respond.turn([{ text: 'A short answer with `code` and a list:\n\n1. one\n2. two' }]));
    await open();
    expect(await page.isVisible('#sidebar')).toBe(false);
    await send('Hello from a phone');
    await waitForState((s) => s.status === 'done');
    await screenshot(page, 'chat-narrow');
    await page.click('#toggle-sidebar');
    expect(await page.isVisible('#sidebar')).toBe(true);
    expect(await page.getAttribute('#toggle-sidebar', 'aria-expanded')).toBe('true');
    await screenshot(page, 'chat-narrow-sidebar');
    await page.keyboard.press('Escape');
    expect(await page.isVisible('#sidebar')).toBe(false);
    await page.emulateMedia({ colorScheme: 'dark' });
    await screenshot(page, 'chat-narrow-dark');
    // nothing wider than the screen
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    expect(problems.errors).toEqual([]);
  });
});
