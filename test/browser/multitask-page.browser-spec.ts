import type { Browser, BrowserContext, Page } from 'playwright-core';
import { DataSource } from 'typeorm';
import { startApp, type TestApp } from '../support/app';
import { ReplayServer, respond } from '../support/replay-server';
import { sse, type SseEvent } from '../support/sse-client';
import { waitFor } from '../support/wait-for';
import { describeBrowser, launchChromium, openPage } from './browser-harness';

/**
 * Issue 33 on the chat page: a message sent while the conversation's previous reply is still
 * being written (here by another client) is queued, shown as queued, and its Stop takes it out
 * of the queue, so it never runs.
 */
describeBrowser('chat page: a message queued behind the active reply', () => {
  let llm: ReplayServer;
  let t: TestApp;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;

  beforeAll(async () => {
    browser = await launchChromium();
    llm = await ReplayServer.start();
    t = await startApp({ LLM_PROVIDER: 'openai', LLM_BASE_URL: llm.openAiBaseUrl, LLM_MODEL: 'scripted-model' });
    ({ context, page } = await openPage(browser));
  }, 120_000);
  afterAll(async () => {
    await context?.close();
    await browser?.close();
    await t?.close();
    await llm?.close();
  });

  const state = () => page.evaluate(() => (window as any).__orion?.state() ?? null).catch(() => null);
  const waitForState = (predicate: (s: any) => boolean) =>
    waitFor(async () => {
      const s = await state();
      return s && predicate(s) ? s : null;
    }, { timeoutMs: 15_000, intervalMs: 40, what: 'the page\'s turn state' });

  it('sends with enqueue, shows the message as queued, and Stop cancels it before it starts', async () => {
    llm.enqueue(respond.turn([{ text: 'Hello there.' }]));
    const opening = await sse(`${t.url}/api/chat/messages`, { body: { content: 'Hello' } });
    const conversationId = opening.events[0].data.conversationId as string;
    await page.goto(`${t.url}/?c=${conversationId}`);
    await page.waitForFunction(() => document.documentElement.dataset.ready === 'true');

    // another client's turn is being written (its model stalls mid-answer)
    llm.enqueue(respond.turn([{ text: 'Busy ' }, { text: 'writing' }], { faults: { stallAfter: 2 } }));
    let busyChunk!: (e: SseEvent) => void;
    const chunk = new Promise<SseEvent>((resolve) => (busyChunk = resolve));
    const busy = sse(`${t.url}/api/chat/messages`, { body: { content: 'Other tab', conversationId }, timeoutMs: 30_000, onEvent: (e) => void (e.event === 'chunk' && busyChunk(e)) });
    const activeRequestId = (await chunk).data.requestId as string;

    const posted = page.waitForRequest((r) => r.method() === 'POST' && r.url().includes('/api/chat/messages'));
    await page.fill('#message', 'Queued question');
    await page.press('#message', 'Enter');
    expect(JSON.parse((await posted).postData() ?? '{}').options).toMatchObject({ multitask: 'enqueue' });
    const queued = await waitForState((s) => s.status === 'queued');
    expect(queued.queuePosition).toBe(1);
    await page.locator('.message[data-status="queued"] .status-pill', { hasText: 'Queued' }).waitFor();
    expect(await page.locator('#turn-status').textContent()).toContain('Queued (position 1)');
    expect(await page.locator('#stop').isVisible()).toBe(true);

    await page.click('#stop');
    const stopped = await waitForState((s) => s.status === 'stopped');
    expect(stopped.stopReason).toBe('cancelled');
    const ds = t.app.get(DataSource);
    expect((await ds.query(`SELECT count(*)::int AS n FROM conversation_turns WHERE conversation_id = $1`, [conversationId]))[0].n).toBe(0);

    // the other client's turn ends; the stopped message never ran
    expect((await fetch(`${t.url}/api/chat/runs/${activeRequestId}/cancel`, { method: 'POST' })).status).toBe(202);
    await busy;
    const runs = await ds.query(`SELECT count(*)::int AS n FROM runs WHERE conversation_id = $1`, [conversationId]);
    expect(runs[0].n).toBe(2);
    const messages = (await (await fetch(`${t.url}/api/chat/conversations/${conversationId}/messages`)).json()) as Array<{ content: string }>;
    expect(messages.map((m) => m.content)).not.toContain('Queued question');
  });
});
