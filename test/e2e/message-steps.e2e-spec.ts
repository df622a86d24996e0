import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startApp, type TestApp } from '../support/app';
import { ReplayServer, respond } from '../support/replay-server';
import { sse, type SseEvent } from '../support/sse-client';
import type { ToolDefinition, ToolExecuteResult } from '../../src/tools/tool-definition';
import { ToolRegistryService } from '../../src/tools/tool-registry.service';
import { failingTool } from '../support/test-tools';

const broken = failingTool('dictionary_service', 'dictionary service answered 502 Bad Gateway');

type Step = Record<string, any>;
const post = (url: string, body: unknown) => fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
const of = (events: SseEvent[], type: string) => events.filter((e) => e.event === type);

/**
 * Issue 13 item 2: an assistant message keeps the steps of its turn — every tool call with its
 * shown arguments, outcome and duration, the sources, notices and phases — and the messages
 * route returns them, so a reloaded conversation shows what the live turn showed.
 */
describe('tool steps stored with the assistant message', () => {
  let llm: ReplayServer;
  let t: TestApp;

  beforeAll(async () => {
    llm = await ReplayServer.start();
    t = await startApp({ LLM_PROVIDER: 'openai', LLM_BASE_URL: llm.openAiBaseUrl, LLM_MODEL: 'scripted-model', TWO_STAGE_ENABLED: 'true', LLM_API_KEY: 'steps-SECRET-key-0123456789' });
    t.app.get(ToolRegistryService).register(broken);
    const project = join(t.workspace, 'default');
    mkdirSync(join(project, 'guides'), { recursive: true });
    writeFileSync(join(project, 'guides', 'install.md'), '# Installing Orion\n\nRun npm install, then npm start.\n');
    expect((await post(`${t.url}/api/knowledge/ingest`, { projectId: 'default' })).status).toBe(200);
  });
  afterAll(async () => {
    await t.close();
    await llm.close();
  });
  beforeEach(() => llm.reset());

  const stored = async (events: SseEvent[]) => {
    const res = await fetch(`${t.url}/api/chat/conversations/${events[0].data.conversationId}/messages`);
    expect(res.status).toBe(200);
    const msgs = await res.json();
    expect(msgs.find((m: { role: string }) => m.role === 'user').steps).toEqual([]);
    return msgs.find((m: { role: string; requestId: string }) => m.role === 'assistant' && m.requestId === events[0].data.requestId);
  };
  const tools = (steps: Step[]) => steps.filter((s) => s.type === 'tool');

  it.each([
    ['unified', '/api/chat/messages'],
    ['two-stage', '/api/chat/messages_two_stage'],
  ])('%s: each call (arguments, outcome, duration, the failure reason), the refused duplicate and its notice', async (_p, route) => {
    llm.enqueue(
      respond.turn([{ text: 'Reading.' }, { toolCall: { name: 'read_file', args: { path: 'guides/install.md' }, id: 'r1' } }]),
      respond.turn([{ toolCall: { name: 'dictionary_service', args: { word: 'npm' }, id: 'd1' } }]),
      respond.turn([{ toolCall: { name: 'read_file', args: { path: 'guides/install.md' }, id: 'r2' } }]),
      respond.turn([{ text: 'Run npm install, then npm start.' }]),
    );
    const { events } = await sse(`${t.url}${route}`, { body: { content: 'How do I install it?' }, timeoutMs: 30_000 });
    expect(events.at(-1)!.event).toBe('done');
    const message = await stored(events);
    const calls = tools(message.steps);
    expect(calls.map((c) => [c.name, c.status, c.outcome ?? null])).toEqual([
      ['read_file', 'completed', 'success'],
      ['dictionary_service', 'failed', 'exception'],
      ['read_file', 'refused', null],
    ]);
    expect(calls[0]).toMatchObject({ callId: 'r1', arguments: { path: 'guides/install.md' }, isError: false });
    expect(typeof calls[0].durationMs).toBe('number');
    expect(calls[1]).toMatchObject({ isError: true, arguments: { word: 'npm' } });
    expect(calls[1].message).toContain('502 Bad Gateway');
    // the duration is the one the stream carried
    const finished = of(events, 'tool_progress').filter((e) => e.data.action === 'completed' || e.data.action === 'failed');
    expect(calls.slice(0, 2).map((c) => c.durationMs)).toEqual(finished.map((e) => e.data.durationMs));
    // notices in the order the stream sent them
    expect(message.steps.filter((s: Step) => s.type === 'notice').map((s: Step) => s.code)).toEqual(of(events, 'notice').map((e) => e.data.code));
    expect(message.steps.some((s: Step) => s.type === 'notice' && s.code === 'duplicate_tool_call')).toBe(true);
    // phases as the stream opened and closed them
    const phases = message.steps.filter((s: Step) => s.type === 'phase');
    expect(phases.map((s: Step) => [s.phaseIndex, s.phase])).toEqual(of(events, 'phase').filter((e) => e.data.status === 'start').map((e) => [e.data.phaseIndex, e.data.phase]));
    expect(phases.every((s: Step) => typeof s.endReason === 'string')).toBe(true);
    // steps come in stream order: the first tool before the failing one, before the refusal's notice
    const order = message.steps.map((s: Step) => (s.type === 'tool' ? `${s.type}:${s.callId}` : s.type));
    expect(order.indexOf('tool:r1')).toBeLessThan(order.indexOf('tool:d1'));
  });

  // two-stage sends `sources` too since issue #30 (after the tool phase that retrieved)
  it.each([
    ['unified', '/api/chat/messages'],
    ['two-stage', '/api/chat/messages_two_stage'],
  ])('%s: the sources event is kept whole with the message', async (_p, route) => {
    llm.enqueue(
      respond.turn([{ toolCall: { name: 'rag_query', args: { query: 'how to install orion' }, id: 'q1' } }]),
      respond.turn([{ text: 'Install with npm install.' }]),
    );
    const { events } = await sse(`${t.url}${route}`, { body: { content: 'According to the docs, how do I install Orion?' }, timeoutMs: 30_000 });
    expect(of(events, 'sources')).toHaveLength(1);
    const [sources] = of(events, 'sources');
    const message = await stored(events);
    const kept = message.steps.find((s: Step) => s.type === 'sources');
    const { data, sourceTypes, ragCount, webCount, confidence, metrics } = sources.data;
    expect(kept).toEqual({ type: 'sources', data, sourceTypes, ragCount, webCount, confidence, ...(metrics ? { metrics } : {}) });
    expect(JSON.stringify(kept.data)).toContain('install.md');
  });

  it('a secret in tool arguments is masked in the stored steps as in the stream', async () => {
    llm.enqueue(
      respond.turn([{ toolCall: { name: 'dictionary_service', args: { word: 'steps-SECRET-key-0123456789' }, id: 'd1' } }]),
      respond.turn([{ text: 'No luck.' }]),
    );
    const { events } = await sse(`${t.url}/api/chat/messages`, { body: { content: 'look it up' }, timeoutMs: 30_000 });
    const message = await stored(events);
    expect(tools(message.steps)).toHaveLength(1);
    expect(JSON.stringify(message)).not.toContain('steps-SECRET-key-0123456789');
  });

  it('two-stage paused and resumed: the message keeps the steps of both legs', async () => {
    llm.enqueue(
      respond.turn([{ text: 'Reading. ' }, { toolCall: { name: 'read_file', args: { path: 'guides/install.md' }, id: 'r1' } }], { faults: { delayMs: 150 } }),
      respond.turn([{ toolCall: { name: 'list_files', args: { path: 'guides' }, id: 'l1' } }]),
      respond.turn([{ text: 'Install with npm install.' }]),
    );
    let pause: Promise<Response> | undefined;
    const first = await sse(`${t.url}/api/chat/messages_two_stage`, {
      body: { content: 'How do I install it?' },
      onEvent: (e) => {
        if (e.event === 'chunk' && !pause) pause = post(`${t.url}/api/chat/runs/${e.data.requestId}/pause`, {});
      },
    });
    expect((await pause!).status).toBe(202);
    const paused = first.events.at(-1)!;
    expect(paused.event).toBe('paused');
    const requestId = first.events[0].data.requestId as string;
    const second = await sse(`${t.url}/api/chat/messages_two_stage/resume`, { body: { requestId, resumeFromPhaseIndex: paused.data.resumeFromPhaseIndex }, timeoutMs: 30_000 });
    expect(second.events.at(-1)!.event).toBe('done');
    const message = await stored(first.events);
    expect(tools(message.steps).map((c) => [c.name, c.status])).toEqual([
      ['read_file', 'completed'],
      ['list_files', 'completed'],
    ]);
  });
});
