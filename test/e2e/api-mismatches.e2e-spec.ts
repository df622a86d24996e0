import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ToolDefinition } from '../../src/tools/tool-definition';
import { ToolRegistryService } from '../../src/tools/tool-registry.service';
import { startApp, type TestApp } from '../support/app';
import { parsePrometheusText, seriesKey } from '../support/prometheus-text';
import { ReplayServer, respond } from '../support/replay-server';
import { sse, type SseEvent } from '../support/sse-client';

/**
 * Issue #30, item 6: what a new user found the service doing differently from what docs/API.md
 * and the README say, over HTTP on a running service.
 */
const post = (url: string, body: unknown) => fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
const of = (events: SseEvent[], type: string) => events.filter((e) => e.event === type);

describe('with a scripted model', () => {
  let llm: ReplayServer;
  let t: TestApp;
  /** resolves the hanging tool's pending call when the test says so (never on its own) */
  let toolStarted: () => void = () => undefined;

  beforeAll(async () => {
    llm = await ReplayServer.start();
    t = await startApp({ LLM_PROVIDER: 'openai', LLM_BASE_URL: llm.openAiBaseUrl, LLM_MODEL: 'scripted-model' });
    mkdirSync(join(t.workspace, 'default', 'guides'), { recursive: true });
    writeFileSync(join(t.workspace, 'default', 'guides', 'install.md'), '# Install\nRun npm install, then npm start.\n');
    expect((await post(`${t.url}/api/knowledge/ingest`, {})).status).toBe(200);
    const hang: ToolDefinition = {
      name: 'wait_for_signal',
      description: 'Waits until the turn is cancelled',
      parameters: { type: 'object', properties: {} },
      origin: 'builtin',
      isAvailable: () => true,
      execute: (_args, ctx) =>
        new Promise((_resolve, reject) => {
          toolStarted();
          ctx.signal?.addEventListener('abort', () => reject(new Error('aborted')), { once: true });
        }),
    };
    t.app.get(ToolRegistryService).register(hang);
  });
  afterAll(async () => {
    await t.close();
    await llm.close();
  });
  beforeEach(() => llm.reset());

  it('every sources event carries metrics: the retrieval\'s after rag_query, null when no retrieval ran', async () => {
    llm.enqueue(respond.turn([{ text: 'Hello there.' }]));
    const plain = await sse(`${t.url}/api/chat/messages`, { body: { content: 'Say hello' } });
    const [noRetrieval] = of(plain.events, 'sources');
    expect(noRetrieval.data).toHaveProperty('metrics', null);

    llm.enqueue(respond.turn([{ toolCall: { name: 'rag_query', args: { query: 'install' } } }]), respond.turn([{ text: 'Run npm install.' }]));
    const rag = await sse(`${t.url}/api/chat/messages`, { body: { content: 'According to the docs, how do I install it?' } });
    const [withRetrieval] = of(rag.events, 'sources');
    expect(withRetrieval.data.metrics).toEqual(expect.objectContaining({ method: expect.any(String), candidates: expect.any(Number), returned: expect.any(Number) }));
  });

  it('a catalog at or below TOOL_RETRIEVAL_THRESHOLD offers every tool and writes no tool_retrieval trace (README)', async () => {
    llm.enqueue(respond.turn([{ text: 'Hi.' }]));
    const res = await sse(`${t.url}/api/chat/messages`, { body: { content: 'Hi' } });
    const requestId = res.events[0].data.requestId as string;
    const listed = (await (await fetch(`${t.url}/api/tools`)).json()) as Array<{ name: string; available: boolean }>;
    const offered = (llm.chatRequests[0].body.tools as Array<{ function: { name: string } }>).map((x) => x.function.name);
    expect(offered.sort()).toEqual(listed.filter((x) => x.available).map((x) => x.name).sort());
    // the trace is stored before done: no wait needed
    expect(await (await fetch(`${t.url}/api/trace?requestId=${requestId}&type=tool_retrieval`)).json()).toEqual([]);
    expect(((await (await fetch(`${t.url}/api/trace?requestId=${requestId}&type=llm_request`)).json()) as unknown[]).length).toBe(1);
  });

  it('a tool stopped by a cancel has outcome cancelled (stream, trace and metrics), not exception', async () => {
    const metric = async () => parsePrometheusText(await (await fetch(`${t.url}/metrics`)).text());
    const before = await metric();
    const started = new Promise<void>((resolve) => (toolStarted = resolve));
    llm.enqueue(respond.turn([{ toolCall: { name: 'wait_for_signal', args: {}, id: 'call_wait' } }]));
    let cancel: Promise<Response> | undefined;
    const res = await sse(`${t.url}/api/chat/messages`, {
      body: { content: 'wait for the signal' },
      onEvent: (e) => {
        if (e.event === 'tool_progress' && e.data.action === 'calling') cancel = started.then(() => post(`${t.url}/api/chat/runs/${e.data.requestId}/cancel`, {}));
      },
    });
    expect((await cancel!).status).toBe(202);
    expect(res.events.at(-1)!.data.stopReason).toBe('cancelled');
    const requestId = res.events[0].data.requestId as string;
    const finished = of(res.events, 'tool_progress').filter((e) => e.data.action !== 'calling');
    expect(finished.map((e) => e.data.outcome)).toEqual(['cancelled']);
    const results = (await (await fetch(`${t.url}/api/trace?requestId=${requestId}&type=tool_result`)).json()) as Array<{ details: { outcome: string } }>;
    expect(results.map((r) => r.details.outcome)).toEqual(['cancelled']);
    const after = await metric();
    const key = seriesKey('orion_tool_executions_total', { tool: 'wait_for_signal', outcome: 'cancelled' });
    expect((after.get(key) ?? 0) - (before.get(key) ?? 0)).toBe(1);
    expect(after.get(seriesKey('orion_tool_executions_total', { tool: 'wait_for_signal', outcome: 'exception' }))).toBeUndefined();
  });

  it('GET /api/chat/runs/:id never shows a lastSeq behind what the client has received', async () => {
    const words = Array.from({ length: 12 }, (_, i) => ({ text: `w${i} ` }));
    llm.enqueue(respond.turn(words, { faults: { delayMs: 40 } }));
    const seen: Array<Promise<[number, number]>> = [];
    const res = await sse(`${t.url}/api/chat/messages`, {
      body: { content: 'count slowly' },
      onEvent: (e) => {
        if (e.event !== 'chunk' || seen.length >= 4) return;
        const received = e.data.seq as number;
        seen.push(fetch(`${t.url}/api/chat/runs/${e.data.requestId}`).then(async (r) => [received, ((await r.json()) as { lastSeq: number }).lastSeq]));
      },
    });
    const pairs = await Promise.all(seen);
    expect(pairs.length).toBe(4);
    for (const [received, lastSeq] of pairs) expect(lastSeq).toBeGreaterThanOrEqual(received);
    const run = (await (await fetch(`${t.url}/api/chat/runs/${res.events[0].data.requestId}`)).json()) as { lastSeq: number; status: string };
    expect(run).toMatchObject({ status: 'completed', lastSeq: res.events.at(-1)!.data.seq });
  });
});

describe('the replay model (the embedded default) in tool-only mode', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startApp();
    mkdirSync(join(t.workspace, 'default', 'docs'), { recursive: true });
    writeFileSync(join(t.workspace, 'default', 'docs', 'roadmap.md'), '# Roadmap\nShip it.\n');
  });
  afterAll(() => t?.close());

  const execute = async (userInput: string) => {
    const res = await post(`${t.url}/api/orchestration/execute`, { userInput, mode: 'Classic' });
    expect(res.status).toBe(200);
    return (await res.json()) as { isSuccess: boolean; error: string | null; decidedCalls: Array<{ toolName: string; args: unknown }>; executions: Array<{ outcome: string; isError: boolean; resultObject: Record<string, unknown> }> };
  };

  it('calls the tool the request names: read → read_file, list → list_files, the knowledge base → rag_query', async () => {
    const read = await execute('read docs/roadmap.md');
    expect(read.decidedCalls).toEqual([{ toolName: 'read_file', args: { path: 'docs/roadmap.md' } }]);
    expect(read).toMatchObject({ isSuccess: true, error: null, executions: [{ outcome: 'success', isError: false }] });
    expect(read.executions[0].resultObject.content).toContain('Ship it.');

    const list = await execute('list the files of the project');
    expect(list.decidedCalls).toEqual([{ toolName: 'list_files', args: { path: '.' } }]);
    expect(list.executions).toEqual([expect.objectContaining({ outcome: 'success', isError: false })]);

    const rag = await execute('search the knowledge base for the roadmap');
    expect(rag.decidedCalls.map((c) => c.toolName)).toEqual(['rag_query']);
  });

  it('a request that names no tool still decides nothing (no_tool_calls)', async () => {
    expect(await execute('colony overview')).toMatchObject({ isSuccess: false, error: 'no_tool_calls', executions: [] });
  });
});
