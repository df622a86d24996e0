import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startApp, type TestApp } from '../support/app';
import { ReplayServer, respond } from '../support/replay-server';
import { checkEnvelope, sse } from '../support/sse-client';

/** Issue #5: a leading /command goes to the command registry and never to the model. */
describe('chat /commands', () => {
  let llm: ReplayServer;
  let searx: Server;
  let searxQueries: string[] = [];
  let t: TestApp;

  beforeAll(async () => {
    llm = await ReplayServer.start();
    // a SearXNG stand-in: the search tool calls GET /search?q=…&format=json
    searx = createServer((req, res) => {
      searxQueries.push(req.url ?? '');
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ query: 'q', results: [{ url: 'https://example.org/orion', title: 'Orion docs', content: 'How Orion orchestrates tools', engine: 'duckduckgo', score: 1.2 }] }));
    });
    await new Promise<void>((r) => searx.listen(0, '127.0.0.1', () => r()));
    const searxUrl = `http://127.0.0.1:${(searx.address() as AddressInfo).port}`;
    t = await startApp({ LLM_PROVIDER: 'openai', LLM_BASE_URL: llm.openAiBaseUrl, LLM_MODEL: 'scripted-model', TWO_STAGE_ENABLED: 'true', SEARXNG_URL: searxUrl });
  });
  afterAll(async () => {
    await t.close();
    await llm.close();
    await new Promise((r) => searx.close(r));
  });

  const text = (events: { event: string; data: Record<string, unknown> }[]) => events.filter((e) => e.event === 'chunk').map((e) => e.data.content).join('');

  it.each(['messages', 'messages_two_stage'])('/help on %s lists the commands without calling the model, and is stored', async (route) => {
    const res = await sse(`${t.url}/api/chat/${route}`, { body: { content: '/help' } });
    checkEnvelope(res.events);
    expect(res.events[0].data.protocol).toBe('command');
    expect(text(res.events)).toContain('/rag <query>');
    expect(text(res.events)).toContain('/search <query>');
    expect(res.events.at(-1)!.data).toMatchObject({ stopReason: 'final_answer' });
    expect(llm.chatRequests).toHaveLength(0);
    const msgs = await (await fetch(`${t.url}/api/chat/conversations/${res.events[0].data.conversationId}/messages`)).json();
    expect(msgs.map((m: { role: string; content: string }) => m.role)).toEqual(['user', 'assistant']);
    expect(msgs[1].content).toBe(text(res.events));
  });

  it('/tools lists the available tools', async () => {
    const res = await sse(`${t.url}/api/chat/messages`, { body: { content: '/tools' } });
    expect(text(res.events)).toContain('`read_file`');
    expect(text(res.events)).toContain('`web_search`');
  });

  it('/search runs web_search directly and sends its sources', async () => {
    const res = await sse(`${t.url}/api/chat/messages`, { body: { content: '/search orion orchestration' } });
    expect(text(res.events)).toContain('Orion docs');
    const sources = res.events.filter((e) => e.event === 'sources');
    expect(sources).toHaveLength(1);
    expect(sources[0].data).toMatchObject({ webCount: 1, ragCount: 0, sourceTypes: ['web'] });
    expect(res.events.filter((e) => e.event === 'tool_progress').map((e) => e.data.action)).toEqual(['calling', 'completed']);
    expect(llm.chatRequests).toHaveLength(0);
    expect(searxQueries.some((q) => q.startsWith('/search?') && q.includes('orion+orchestration'))).toBe(true);
  });

  it('/rag searches the ingested knowledge base, with one sources event and progress', async () => {
    const { mkdirSync, writeFileSync } = await import('node:fs');
    const { join } = await import('node:path');
    mkdirSync(join(t.workspace, 'default', 'guides'), { recursive: true });
    writeFileSync(join(t.workspace, 'default', 'guides', 'install.md'), '# Installing Orion\n\nRun npm install, then npm start. The first start creates the embedded database.\n');
    writeFileSync(join(t.workspace, 'default', 'guides', 'roadmap.md'), '# Roadmap\n\nNext quarter: the unified route.\n');
    const ingest = await fetch(`${t.url}/api/knowledge/ingest`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ projectId: 'default' }) });
    expect(ingest.status).toBe(200);
    const res = await sse(`${t.url}/api/chat/messages`, { body: { content: '/rag how do I install orion' } });
    expect(text(res.events)).toContain('Installing Orion');
    const sources = res.events.filter((e) => e.event === 'sources');
    expect(sources).toHaveLength(1);
    expect(sources[0].data.ragCount).toBeGreaterThan(0);
    expect(res.events.filter((e) => e.event === 'tool_phase').map((e) => e.data.message)).toEqual(expect.arrayContaining(['Searching the knowledge base…']));
    expect(llm.chatRequests).toHaveLength(0);
  });

  it('an unknown command answers with the list', async () => {
    const res = await sse(`${t.url}/api/chat/messages`, { body: { content: '/frobnicate now' } });
    expect(text(res.events)).toMatch(/^Unknown command `\/frobnicate`/);
    expect(text(res.events)).toContain('/help');
    expect(llm.chatRequests).toHaveLength(0);
  });

  it('a slash inside a sentence is a normal message', async () => {
    llm.enqueue(respond.turn([{ text: 'It is a path.' }]));
    const res = await sse(`${t.url}/api/chat/messages`, { body: { content: 'what is a/b?' } });
    expect(res.events[0].data.protocol).toBe('unified');
    expect(llm.chatRequests).toHaveLength(1);
  });
});
