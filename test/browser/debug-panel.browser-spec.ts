import { writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page, Request } from 'playwright-core';
import { startApp, type TestApp } from '../support/app';
import { ReplayServer, respond } from '../support/replay-server';
import { sse } from '../support/sse-client';
import { describeBrowser, launchChromium, openPage, screenshot, unlabeledControls, type PageProblems } from './browser-harness';

/** Issue #7, the debug panel at `/debug`: the tool-only plan's two buttons and the trace viewer. */
describeBrowser('debug panel (/debug) in headless Chromium', () => {
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
    mkdirSync(join(t.workspace, 'default'), { recursive: true });
    writeFileSync(join(t.workspace, 'default', 'README.md'), '# Demo project\n');
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

  const open = async (path = '/debug') => {
    await page.goto(`${t.url}${path}`);
    await page.waitForFunction(() => document.documentElement.dataset.ready === 'true');
  };
  /** The JSON the panel shows, once it shows the result of a `mode` run. */
  const resultJson = async (mode: string) => {
    await page.waitForFunction((m) => (document.getElementById('execute-meta')?.textContent ?? '').startsWith(`${m}:`), mode, { timeout: 10_000 });
    return JSON.parse((await page.textContent('#execute-json')) ?? '') as Record<string, any>;
  };

  it('runs Classic and NarrowTopK with the given options and shows each raw ToolCallsResult', async () => {
    const listFiles = respond.turn([{ toolCall: { name: 'list_files', args: { path: '.' } } }]);
    llm.enqueue(listFiles, listFiles);
    const posted: Request[] = [];
    page.on('request', (r) => {
      if (r.url().endsWith('/api/orchestration/execute')) posted.push(r);
    });
    await open();
    expect(await unlabeledControls(page)).toEqual([]);
    await page.fill('#user-input', 'list the project files');
    await page.fill('#participant-ids', 'pawn_1, pawn_2');
    await page.fill('#max-calls', '2');
    await page.fill('#narrow-top-k', '3');
    await page.fill('#min-score', '0.1');
    await page.fill('#locale', 'en');

    await page.click('#run-classic');
    const classic = await resultJson('Classic');
    expect(classic).toMatchObject({ mode: 'Classic', isSuccess: true, error: null, decidedCalls: [{ toolName: 'list_files' }] });
    expect(classic.executions).toEqual([expect.objectContaining({ toolName: 'list_files', outcome: 'success' })]);
    expect(classic.exposedTools).toEqual(expect.arrayContaining(['list_files', 'read_file']));
    expect(posted[0].postDataJSON()).toEqual({
      userInput: 'list the project files',
      participantIds: ['pawn_1', 'pawn_2'],
      projectId: 'default',
      mode: 'Classic',
      options: { maxCalls: 2, narrowTopK: 3, minScoreThreshold: 0.1, locale: 'en' },
    });
    await screenshot(page, 'debug-classic', true);

    await page.click('#run-narrow');
    const narrow = await resultJson('NarrowTopK');
    expect(narrow.mode).toBe('NarrowTopK');
    expect(typeof narrow.isSuccess).toBe('boolean');
    expect(Array.isArray(narrow.exposedTools)).toBe(true);
    expect(narrow.exposedTools.length).toBeLessThanOrEqual(3);
    expect(posted[1].postDataJSON()).toMatchObject({ mode: 'NarrowTopK', options: { narrowTopK: 3 } });
    await screenshot(page, 'debug-narrow-top-k', true);

    // the run's trace, one click away
    await page.click('#open-trace');
    await page.waitForSelector('#trace-rows tr');
    const types = await page.locator('#trace-rows td.type').allTextContents();
    expect(types).toEqual(expect.arrayContaining(['llm_request', 'llm_response']));
    expect(await page.inputValue('#trace-request-id')).toBe(narrow.requestId);
    expect(problems.errors).toEqual([]);
  });

  it('shows a refused request as its error, not as a result', async () => {
    await open();
    await page.fill('#user-input', 'anything');
    await page.fill('#locale', 'klingon');
    await page.click('#run-classic');
    await page.waitForSelector('#execute-meta.error');
    expect(await page.textContent('#execute-meta')).toMatch(/^HTTP 400 .*locale must be en or zh/);
    expect(JSON.parse((await page.textContent('#execute-json')) ?? '')).toMatchObject({ statusCode: 400 });
    expect(problems.errors).toEqual(['HTTP 400 POST /api/orchestration/execute']);
  });

  it('asks for the API key when the server sets API_KEYS, then sends it as a Bearer token from both pages', async () => {
    const secured = await startApp({ LLM_PROVIDER: 'openai', LLM_BASE_URL: llm.openAiBaseUrl, LLM_MODEL: 'scripted-model', API_KEYS: 'k-browser-test-123' });
    try {
      llm.enqueue(respond.turn([{ text: 'Authorized answer.' }]), respond.turn([{ toolCall: { name: 'list_files', args: {} } }]));
      const authorization: string[] = [];
      page.on('request', (r) => {
        if (r.url().includes('/api/')) authorization.push(`${r.method()} ${new URL(r.url()).pathname} ${r.headers()['authorization'] ?? '-'}`);
      });
      await page.goto(`${secured.url}/`);
      await page.waitForFunction(() => document.documentElement.dataset.ready === 'true');
      expect(await page.textContent('#banner')).toContain('needs an API key');
      expect(await page.isVisible('#api-key')).toBe(true);

      await page.fill('#api-key', 'k-browser-test-123');
      await page.click('#api-key-form button[type="submit"]');
      await page.waitForFunction(() => document.getElementById('model-badge')?.textContent === 'openai · scripted-model');
      expect(await page.isHidden('#banner')).toBe(true);
      await page.fill('#message', 'Hello with a key');
      await page.press('#message', 'Enter');
      await page.waitForFunction(() => (window as any).__orion.state()?.status === 'done');
      expect((await page.locator('.message.live .markdown').textContent())?.trim()).toBe('Authorized answer.');
      expect(authorization).toContain('POST /api/chat/messages Bearer k-browser-test-123');

      // the debug panel shares the key
      await page.goto(`${secured.url}/debug`);
      await page.fill('#user-input', 'list files');
      await page.click('#run-classic');
      expect((await resultJson('Classic')).isSuccess).toBe(true);
      expect(authorization.at(-1)).toBe('POST /api/orchestration/execute Bearer k-browser-test-123');
      // before the key was saved, the page's calls were refused; nothing else failed
      expect(problems.errors.every((e) => e.startsWith('HTTP 401 GET /api/'))).toBe(true);
    } finally {
      await secured.close();
    }
  });

  it('views the trace of a chat turn by requestId (linked from the chat page)', async () => {
    llm.enqueue(respond.turn([{ toolCall: { name: 'list_files', args: {} } }]), respond.turn([{ text: 'One file.' }]));
    const turn = await sse(`${t.url}/api/chat/messages_two_stage`, { body: { content: 'What files?' }, timeoutMs: 10_000 });
    const requestId = turn.events[0].data.requestId as string;
    await open(`/debug?requestId=${requestId}`);
    await page.waitForSelector('#trace-rows tr');
    const types = await page.locator('#trace-rows td.type').allTextContents();
    expect(types).toEqual(expect.arrayContaining(['orchestration_phase_start', 'tool_call', 'tool_result', 'orchestration_phase_end']));
    expect(await page.textContent('#trace-meta')).toBe(`${types.length} events`);
    // the run's usage (issue 46): the scripted calls report 12 prompt tokens each; no LLM_PRICES here
    await page.waitForSelector('#run-usage:not([hidden])');
    const usage = turn.events.at(-1)!.data.usage as { totalTokens: number; promptTokens: number; completionTokens: number };
    expect(await page.textContent('#run-usage')).toBe(
      `Usage: ${usage.totalTokens} tokens (prompt ${usage.promptTokens}, completion ${usage.completionTokens}) in 2 model calls · no price for this model`,
    );
    await screenshot(page, 'debug-trace', true);

    // filtered by type
    await page.fill('#trace-type', 'tool_call,tool_result');
    await page.click('#load-trace');
    await page.waitForFunction(() => document.getElementById('trace-meta')?.textContent === '2 events');
    expect(await page.locator('#trace-rows td.type').allTextContents()).toEqual(['tool_call', 'tool_result']);
    expect(problems.errors).toEqual([]);
  });
});
