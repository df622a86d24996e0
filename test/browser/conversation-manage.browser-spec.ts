import type { Browser, BrowserContext, Dialog, Page } from 'playwright-core';
import { startApp, type TestApp } from '../support/app';
import { ReplayServer, respond } from '../support/replay-server';
import { sse } from '../support/sse-client';
import { describeBrowser, launchChromium, openPage, screenshot, unlabeledControls, type PageProblems } from './browser-harness';

/** Issue 18: renaming and deleting conversations from the chat page's list, in headless Chromium. */
describeBrowser('chat page: rename and delete conversations', () => {
  let llm: ReplayServer;
  let t: TestApp;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let problems: PageProblems;

  beforeAll(async () => {
    browser = await launchChromium();
    llm = await ReplayServer.start();
    t = await startApp({ LLM_PROVIDER: 'openai', LLM_BASE_URL: llm.openAiBaseUrl, LLM_MODEL: 'scripted-model' });
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

  /** A finished conversation in `projectId`, made over the API. */
  const seed = async (content: string, projectId: string) => {
    llm.enqueue(respond.turn([{ text: `About ${content}.` }]));
    const res = await sse(`${t.url}/api/chat/messages`, { body: { content, projectId } });
    return res.events[0].data.conversationId as string;
  };
  const open = async (projectId: string, conversationId?: string) => {
    await page.goto(`${t.url}/`);
    await page.evaluate((p) => localStorage.setItem('orion.chat.prefs', JSON.stringify({ projectId: p })), projectId);
    await page.goto(`${t.url}/${conversationId ? `?c=${conversationId}` : ''}`);
    await page.waitForFunction(() => document.documentElement.dataset.ready === 'true');
  };
  const titles = () => page.locator('#conversation-list .conversation-title').allTextContents();
  const apiTitles = async (projectId: string) =>
    ((await (await fetch(`${t.url}/api/chat/conversations?projectId=${projectId}`)).json()) as Array<{ title: string }>).map((c) => c.title);
  const answerDialog = (accept: boolean, seen: string[]) => (d: Dialog) => {
    seen.push(d.message());
    void (accept ? d.accept() : d.dismiss());
  };

  it('renames a conversation in place; Escape gives up, a blank title is not sent, the new title survives a reload', async () => {
    const older = await seed('first topic', 'br-rename');
    await seed('second topic', 'br-rename');
    await open('br-rename', older);
    expect(await titles()).toEqual(['second topic', 'first topic']);

    await page.getByRole('button', { name: 'Rename first topic' }).click();
    const input = page.getByRole('textbox', { name: 'New title' });
    expect(await input.inputValue()).toBe('first topic');
    expect(await unlabeledControls(page)).toEqual([]);
    await input.fill('Something else');
    await input.press('Escape');
    expect(await titles()).toEqual(['second topic', 'first topic']);

    await page.getByRole('button', { name: 'Rename first topic' }).click();
    const patches: string[] = [];
    page.on('request', (r) => void (r.method() === 'PATCH' && patches.push(r.url())));
    await input.fill('   ');
    await input.press('Enter');
    expect(await input.isVisible()).toBe(true); // still editing: a blank title is refused here
    await input.fill('Roadmap notes');
    await screenshot(page.locator('#sidebar'), 'conversation-rename');
    await input.press('Enter');
    await page.getByRole('button', { name: 'Rename Roadmap notes' }).waitFor();
    expect(patches).toHaveLength(1);
    expect(await titles()).toEqual(['second topic', 'Roadmap notes']);
    expect(await page.locator('#conversation-title').textContent()).toBe('Roadmap notes');

    await page.reload();
    await page.waitForFunction(() => document.documentElement.dataset.ready === 'true');
    expect(await titles()).toEqual(['second topic', 'Roadmap notes']);
    expect(await apiTitles('br-rename')).toEqual(['second topic', 'Roadmap notes']);
    expect(problems.errors).toEqual([]);
  });

  it('deletes after a confirmation (No keeps it); the conversation is gone from the list and stays gone after a reload', async () => {
    const doomed = await seed('delete me', 'br-delete');
    await seed('keep me', 'br-delete');
    await open('br-delete', doomed);
    expect(await page.locator('#conversation-title').textContent()).toBe('delete me');
    // the icons are drawn (inline SVG), not emoji that need an emoji font: no pictographs anywhere on the page
    const del = page.getByRole('button', { name: 'Delete delete me' });
    expect(await del.locator('svg').count()).toBe(1);
    expect((await del.textContent())?.trim()).toBe('');
    expect(await page.getByRole('button', { name: 'Rename delete me' }).locator('svg').count()).toBe(1);
    expect((await page.locator('body').innerText()).match(/\p{Extended_Pictographic}/gu)).toBeNull();
    await del.hover();
    await screenshot(page.locator('#conversation-list'), 'conversation-actions');

    const dialogs: string[] = [];
    // counts the DELETEs the page starts: a refused confirmation must start none
    await page.evaluate(() => {
      const w = window as any;
      const f = window.fetch.bind(window);
      w.__deletes = 0;
      window.fetch = (input: RequestInfo | URL, init?: RequestInit) => (init?.method === 'DELETE' && w.__deletes++, f(input, init));
    });
    page.once('dialog', answerDialog(false, dialogs));
    await page.getByRole('button', { name: 'Delete delete me' }).click();
    // the click's handler has run to its end (a fetch it made was started) before this evaluation runs
    expect(await page.evaluate(() => (window as any).__deletes)).toBe(0);
    expect(dialogs[0]).toContain('delete me');
    expect(await titles()).toEqual(['keep me', 'delete me']);

    page.once('dialog', answerDialog(true, dialogs));
    await page.getByRole('button', { name: 'Delete delete me' }).click();
    await page.getByRole('button', { name: 'Delete delete me' }).waitFor({ state: 'detached' });
    expect(dialogs).toHaveLength(2);
    expect(await titles()).toEqual(['keep me']);
    // it was open: the page moved to a new conversation
    expect(await page.locator('#conversation-title').textContent()).toBe('New conversation');
    expect(new URL(page.url()).search).toBe('');

    await page.goto(`${t.url}/?c=${doomed}`);
    await page.waitForFunction(() => document.documentElement.dataset.ready === 'true');
    expect(await titles()).toEqual(['keep me']);
    expect(await page.locator('#conversation-title').textContent()).toBe('New conversation');
    expect((await fetch(`${t.url}/api/chat/conversations/${doomed}/messages`)).status).toBe(404);
    expect(problems.errors).toEqual([]);
  });

  it('deleting the conversation whose answer is streaming stops the run first, then deletes it', async () => {
    await open('br-busy');
    llm.enqueue(respond.turn(Array.from({ length: 40 }, (_, i) => ({ text: `w${i} ` })), { faults: { delayMs: 150 } }));
    await page.fill('#message', 'a long answer please');
    await page.press('#message', 'Enter');
    await page.getByRole('button', { name: 'Delete a long answer please' }).waitFor();
    await page.locator('.message.assistant').getByText('w1', { exact: false }).waitFor();
    const conversationId = new URL(page.url()).searchParams.get('c')!;
    const runs = (await (await fetch(`${t.url}/api/chat/conversations/${conversationId}/messages`)).json()) as Array<{ requestId: string }>;
    const requestId = runs[0].requestId;
    expect((await (await fetch(`${t.url}/api/chat/runs/${requestId}`)).json()).status).toBe('running');

    page.once('dialog', answerDialog(true, []));
    await page.getByRole('button', { name: 'Delete a long answer please' }).click();
    await page.getByRole('button', { name: 'Delete a long answer please' }).waitFor({ state: 'detached', timeout: 10_000 });
    expect(await titles()).toEqual([]);
    expect((await fetch(`${t.url}/api/chat/runs/${requestId}`)).status).toBe(404);
    // the model request was stopped, not left to run 40 × 150 ms
    expect(llm.chatRequests[0].closedEarlyAt).toBeDefined();

    await page.reload();
    await page.waitForFunction(() => document.documentElement.dataset.ready === 'true');
    expect(await titles()).toEqual([]);
    // the first DELETE met the running run (409) before the page cancelled it; nothing else failed
    expect(problems.errors.filter((e) => !/^HTTP 409 DELETE \/api\/chat\/conversations\//.test(e))).toEqual([]);
  });
});
