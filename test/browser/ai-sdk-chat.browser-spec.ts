import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { startApp, type TestApp } from '../support/app';
import { ReplayServer, respond, type ScriptStep } from '../support/replay-server';
import { sse } from '../support/sse-client';
import { describeBrowser, launchChromium, openPage, type PageProblems } from './browser-harness';

const ROOT = join(__dirname, '..', '..');
const OUT = join(ROOT, 'test-output', 'ai-sdk-chat');

/**
 * A minimal chat page on the AI SDK's own chat client: `AbstractChat` from the `ai` package (what
 * `useChat` and the other framework bindings build on) with a plain DOM state, and
 * `DefaultChatTransport` pointed at Orion's `/api/chat/ui`. Bundled for the browser by esbuild.
 */
const APP = `
import { AbstractChat, DefaultChatTransport } from 'ai';

/** The chat state the framework bindings keep in their own reactive stores, here plain fields and a render call. */
class DomState {
  constructor(render) { this.render = render; this.messages = []; this.error = undefined; this._status = 'ready'; }
  get status() { return this._status; }
  set status(s) { this._status = s; this.render(); }
  pushMessage(m) { this.messages = [...this.messages, m]; this.render(); }
  popMessage() { this.messages = this.messages.slice(0, -1); this.render(); }
  replaceMessage(i, m) { this.messages = [...this.messages.slice(0, i), m, ...this.messages.slice(i + 1)]; this.render(); }
  snapshot(x) { return structuredClone(x); }
}

class Chat extends AbstractChat {
  constructor(init) { const state = new DomState(() => render(this)); super({ ...init, state }); }
}

function render(chat) {
  document.querySelector('#status').textContent = chat.status;
  const list = document.querySelector('#messages');
  list.replaceChildren(...chat.messages.map((m) => {
    const li = document.createElement('li');
    li.dataset.role = m.role;
    for (const p of m.parts) {
      if (p.type === 'text') { const t = document.createElement('p'); t.className = 'text'; t.textContent = p.text; li.append(t); }
      if (p.type === 'dynamic-tool') { const t = document.createElement('span'); t.className = 'tool'; t.dataset.state = p.state; t.textContent = p.toolName; li.append(t); }
    }
    if (m.metadata && m.metadata.stopReason) li.dataset.stopReason = m.metadata.stopReason;
    return li;
  }));
}

const chat = new Chat({ id: 'browser-chat', transport: new DefaultChatTransport({ api: '/api/chat/ui' }), onError: (e) => console.error(e) });
render(chat);
document.querySelector('form').addEventListener('submit', (e) => {
  e.preventDefault();
  const input = document.querySelector('#q');
  chat.sendMessage({ text: input.value });
  input.value = '';
});
document.documentElement.dataset.ready = 'true';
`;

const PAGE = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>AI SDK chat on Orion</title></head>
<body><ul id="messages"></ul><p id="status"></p>
<form><input id="q" aria-label="Message"><button id="send">Send</button></form>
<script type="module" src="app.js"></script></body></html>`;

const QUESTION = 'Which files are in the project?';
const script: ScriptStep[][] = [[{ text: 'Let me look. ' }, { toolCall: { name: 'list_files', args: { path: '.' }, id: 'call_ls' } }], [{ text: 'The project has README.md and notes.txt.' }]];

describeBrowser('AI SDK chat client in a browser page (POST /api/chat/ui)', () => {
  let llm: ReplayServer;
  let t: TestApp;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let problems: PageProblems;
  let bundle: string;

  beforeAll(async () => {
    mkdirSync(OUT, { recursive: true });
    // inside the repository, so esbuild finds the `ai` package in node_modules
    writeFileSync(join(OUT, 'app.mjs'), APP);
    await promisify(execFile)(join(ROOT, 'node_modules', '.bin', 'esbuild'), [join(OUT, 'app.mjs'), '--bundle', '--format=esm', '--platform=browser', '--target=es2022', `--outfile=${join(OUT, 'app.js')}`, '--log-level=error'], { timeout: 60_000 });
    bundle = readFileSync(join(OUT, 'app.js'), 'utf8');
    browser = await launchChromium();
    llm = await ReplayServer.start();
    t = await startApp({ LLM_PROVIDER: 'openai', LLM_BASE_URL: llm.openAiBaseUrl, LLM_MODEL: 'scripted-model' });
    const project = join(t.workspace, 'default');
    mkdirSync(project, { recursive: true });
    writeFileSync(join(project, 'README.md'), '# Demo\n');
    writeFileSync(join(project, 'notes.txt'), 'notes\n');
  }, 90_000);
  afterAll(async () => {
    await browser?.close();
    await t?.close();
    await llm?.close();
  });
  beforeEach(async () => {
    llm.reset();
    ({ context, page, problems } = await openPage(browser));
    // the test page, served on Orion's origin so the transport's relative URL reaches Orion
    await page.route(`${t.url}/__ai-sdk-chat/**`, (route) => {
      const js = route.request().url().endsWith('/app.js');
      return route.fulfill({ status: 200, contentType: js ? 'text/javascript' : 'text/html', body: js ? bundle : PAGE });
    });
  });
  afterEach(async () => {
    await context?.close();
  });

  it('gets the answer the native route gives, with the list_files step Orion ran', async () => {
    llm.enqueue(...script.map((s) => respond.turn(s)));
    const native = await sse(`${t.url}/api/chat/messages`, { body: { content: QUESTION }, timeoutMs: 20_000 });
    const nativeAnswer = native.events.at(-1)!.data.fullContent as string;

    llm.reset();
    llm.enqueue(...script.map((s) => respond.turn(s)));
    await page.goto(`${t.url}/__ai-sdk-chat/index.html`);
    await page.waitForFunction(() => document.documentElement.dataset.ready === 'true');
    await page.fill('#q', QUESTION);
    await page.click('#send');
    await page.waitForSelector('li[data-role="assistant"][data-stop-reason]', { timeout: 20_000 });
    await page.waitForFunction(() => document.querySelector('#status')?.textContent === 'ready');

    const shown = await page.evaluate(() =>
      [...document.querySelectorAll('#messages li')].map((li) => ({
        role: (li as HTMLElement).dataset.role,
        text: [...li.querySelectorAll('.text')].map((p) => p.textContent).join(''),
        tools: [...li.querySelectorAll<HTMLElement>('.tool')].map((s) => `${s.textContent}:${s.dataset.state}`),
        stopReason: (li as HTMLElement).dataset.stopReason,
      })),
    );
    expect(shown).toEqual([
      { role: 'user', text: QUESTION, tools: [], stopReason: undefined },
      { role: 'assistant', text: nativeAnswer, tools: ['list_files:input-available'], stopReason: 'final_answer' },
    ]);
    // Orion ran the tool: the model's second call carried the listing
    const toolMessages = (llm.chatRequests[1].body.messages as Array<{ role: string; content: string }>).filter((m) => m.role === 'tool');
    expect(toolMessages.map((m) => m.content).join('')).toContain('notes.txt');
    expect(problems.errors).toEqual([]);
  });
});
