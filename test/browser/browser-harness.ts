import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Locator, type Page } from 'playwright-core';
import { NEEDS_CHROMIUM, skippedTitle } from '../support/skip-reason';

/**
 * Headless Chromium for the browser suites (issue #7): Debian's `chromium` driven by
 * playwright-core (which never downloads a browser of its own). `CHROMIUM_PATH` overrides the path.
 */
export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/**
 * Flags for this sandboxed, offline machine (see the machine notes): no sandbox (root), no GPU,
 * and none of Chromium's own background traffic (updates, sync, QUIC), which a closed network
 * refuses. Playwright adds --headless and a fresh temporary --user-data-dir per launch.
 */
export const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** Where screenshots go (gitignored with the rest of test-output/). */
export const SCREENSHOT_DIR = join(__dirname, '..', '..', 'test-output', 'screenshots');

/**
 * `describe` for a browser suite. Without Chromium it is skipped with a message saying how to
 * install it, so `npm test` passes on a fresh machine; with ORION_REQUIRE_BROWSER=1 (CI) a
 * missing Chromium fails the run instead.
 */
export function describeBrowser(name: string, body: () => void): void {
  if (existsSync(CHROMIUM_PATH)) {
    describe(name, body);
    return;
  }
  const how = `Chromium not found at ${CHROMIUM_PATH}: install it with \`apt-get install -y chromium\` (or set CHROMIUM_PATH)`;
  if (process.env.ORION_REQUIRE_BROWSER === '1') {
    describe(name, () => {
      it('needs Chromium (ORION_REQUIRE_BROWSER=1)', () => {
        throw new Error(how);
      });
    });
    return;
  }
  // straight to stderr: Jest drops the console buffer of a file whose tests are all skipped
  process.stderr.write(`\nSKIPPED browser suite "${name}": ${how}. Set ORION_REQUIRE_BROWSER=1 to fail instead.\n`);
  describe.skip(skippedTitle(name, NEEDS_CHROMIUM, `not found at ${CHROMIUM_PATH}`), body);
}

export async function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM_PATH, args: CHROMIUM_ARGS, headless: true, timeout: 20_000 });
}

/** Problems a page reported: uncaught errors and console errors (each test asserts there are none it did not expect). */
export interface PageProblems {
  errors: string[];
}

/** A fresh context (own storage) and page, collecting the page's errors. */
export async function openPage(browser: Browser, viewport = { width: 1280, height: 800 }): Promise<{ context: BrowserContext; page: Page; problems: PageProblems }> {
  const context = await browser.newContext({ viewport });
  const page = await context.newPage();
  const problems: PageProblems = { errors: [] };
  page.on('pageerror', (err) => problems.errors.push(`pageerror: ${err.message}`));
  page.on('console', (msg) => {
    // failed responses are reported below with their URL
    if (msg.type() === 'error' && !msg.text().startsWith('Failed to load resource')) problems.errors.push(`console: ${msg.text()}`);
  });
  page.on('response', (res) => {
    if (res.status() >= 400) problems.errors.push(`HTTP ${res.status()} ${res.request().method()} ${new URL(res.url()).pathname}`);
  });
  return { context, page, problems };
}

/** Saves a PNG of a page (`fullPage`: its whole height) or of one element. */
export async function screenshot(target: Page | Locator, name: string, fullPage = false): Promise<string> {
  mkdirSync(SCREENSHOT_DIR, { recursive: true });
  const path = join(SCREENSHOT_DIR, `${name}.png`);
  if ('goto' in target) await target.screenshot({ path, fullPage });
  else await target.screenshot({ path });
  return path;
}

/** Form controls without a label and buttons without a name: each is an accessibility bug. */
export function unlabeledControls(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const out: string[] = [];
    for (const e of document.querySelectorAll<HTMLInputElement>('input, select, textarea')) {
      if (!e.labels?.length && !e.getAttribute('aria-label') && !e.getAttribute('aria-labelledby')) out.push(`${e.tagName.toLowerCase()}#${e.id}`);
    }
    for (const b of document.querySelectorAll('button')) if (!b.textContent?.trim() && !b.getAttribute('aria-label')) out.push(`button#${b.id}`);
    return out;
  });
}
