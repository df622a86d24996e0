import type { Browser, BrowserContext, Locator, Page } from 'playwright-core';
import { startApp, type TestApp } from '../support/app';
import { describeBrowser, launchChromium, openPage, screenshot, type PageProblems } from './browser-harness';

const KEY = 'swagger-test-key';

/** Swagger UI at /docs with API_KEYS set: Authorize sends the key, so "Try it out" works. */
describeBrowser('Swagger UI (/docs) in headless Chromium', () => {
  let t: TestApp;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let problems: PageProblems;

  beforeAll(async () => {
    browser = await launchChromium();
    t = await startApp({ API_KEYS: `other-key,${KEY}` });
  });
  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });
  beforeEach(async () => {
    ({ context, page, problems } = await openPage(browser));
  });
  afterEach(async () => {
    await context?.close();
  });

  /** Opens an operation, presses "Try it out" then "Execute", and returns the status Swagger UI shows. */
  const execute = async (operation: Locator) => {
    await operation.locator('.try-out__btn').click();
    await operation.locator('button.execute').click();
    const status = operation.locator('.live-responses-table .response .response-col_status');
    await status.first().waitFor({ timeout: 10_000 });
    return (await status.first().textContent())?.trim();
  };

  it('authorizes with a key and runs listConversations: 200, with the key sent as a bearer token', async () => {
    const sent: Array<string | undefined> = [];
    page.on('request', (r) => {
      if (new URL(r.url()).pathname === '/api/chat/conversations') sent.push(r.headers().authorization);
    });
    await page.goto(`${t.url}/docs`);
    const operation = page.locator('#operations-chat-listConversations');
    await operation.waitFor({ timeout: 15_000 });
    expect(await operation.locator('.opblock-summary-path').textContent()).toBe('/api/chat/conversations');

    await page.locator('.auth-wrapper button.authorize').click();
    const dialog = page.locator('.modal-ux');
    await dialog.locator('input').fill(KEY);
    await dialog.locator('.auth-btn-wrapper button.authorize').click();
    await dialog.locator('.auth-btn-wrapper button.btn-done').click();

    await operation.locator('.opblock-summary').click();
    expect(await execute(operation)).toBe('200');
    expect(sent).toEqual([`Bearer ${KEY}`]);
    expect(JSON.parse((await operation.locator('.live-responses-table .response-col_description pre').first().textContent()) ?? '')).toEqual([]);
    await screenshot(page, 'swagger-ui-authorized');
    expect(problems.errors).toEqual([]);
  });

  it('without Authorize the same operation is a 401 (the key is what makes it work)', async () => {
    await page.goto(`${t.url}/docs`);
    const operation = page.locator('#operations-chat-listConversations');
    await operation.waitFor({ timeout: 15_000 });
    await operation.locator('.opblock-summary').click();
    expect(await execute(operation)).toBe('401');
  });
});
