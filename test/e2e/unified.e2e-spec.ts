import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { startApp, type TestApp } from '../support/app';
import { ReplayServer, respond } from '../support/replay-server';
import { checkEnvelope, sse, type SseEvent } from '../support/sse-client';

/** Issue #5 over real HTTP and SSE: the unified agentic route against a scripted model. */
describe('POST /api/chat/messages (unified agentic route)', () => {
  let llm: ReplayServer;
  let t: TestApp;

  beforeAll(async () => {
    llm = await ReplayServer.start();
    t = await startApp({ LLM_PROVIDER: 'openai', LLM_BASE_URL: llm.openAiBaseUrl, LLM_MODEL: 'scripted-model' });
    const project = join(t.workspace, 'default');
    mkdirSync(join(project, 'guides'), { recursive: true });
    writeFileSync(join(project, 'guides', 'install.md'), '# Installing Orion\n\nRun npm install, then npm start.\n');
    writeFileSync(join(project, 'guides', 'roadmap.md'), '# Roadmap\n\nNext: the unified route ships.\n');
    for (let i = 0; i < 10; i++) writeFileSync(join(project, 'guides', `note-${i}.md`), `Note ${i}.\n`);
    const ingest = await fetch(`${t.url}/api/knowledge/ingest`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ projectId: 'default' }) });
    expect(ingest.status).toBe(200);
  });
  afterAll(async () => {
    await t.close();
    await llm.close();
  });
  beforeEach(() => llm.reset());

  const send = (content: string, extra: Record<string, unknown> = {}) => sse(`${t.url}/api/chat/messages`, { body: { content, ...extra }, timeoutMs: 30_000 });
  const of = (events: SseEvent[], type: string) => events.filter((e) => e.event === type);
  const textOf = (events: SseEvent[]) => of(events, 'chunk').map((e) => e.data.content).join('');
  const names = (body: { tools?: Array<{ function: { name: string } }> }) => (body.tools ?? []).map((x) => x.function.name);

  /** One done; the stored answer and the trace tell the same story as the stream. */
  async function checkTurn(events: SseEvent[], stopReason: string) {
    checkEnvelope(events);
    expect(events[0].data.protocol).toBe('unified');
    expect(of(events, 'done')).toHaveLength(1);
    expect(events.at(-1)!.data.stopReason).toBe(stopReason);
    const requestId = events[0].data.requestId as string;
    const msgs = await (await fetch(`${t.url}/api/chat/conversations/${events[0].data.conversationId}/messages`)).json();
    const answer = msgs.filter((m: { role: string; requestId: string }) => m.role === 'assistant' && m.requestId === requestId);
    expect(answer).toHaveLength(1);
    expect(answer[0].content).toBe(textOf(events));
    const trace = (await (await fetch(`${t.url}/api/trace?requestId=${requestId}`)).json()) as Array<{ type: string; details: Record<string, unknown> }>;
    const completed = of(events, 'tool_progress').filter((e) => e.data.action === 'completed' || e.data.action === 'failed');
    expect(trace.filter((x) => x.type === 'tool_result')).toHaveLength(completed.length);
    return { requestId, trace };
  }

  it('chains list_files → read_file → answer, each tool message carrying its tool_call_id', async () => {
    llm.enqueue(
      respond.turn([{ toolCall: { name: 'list_files', args: { path: 'guides' }, id: 'call_list' } }]),
      respond.turn([{ toolCall: { name: 'read_file', args: { path: 'guides/install.md' }, id: 'call_read' } }]),
      respond.turn([{ text: 'Install with npm install, then npm start.' }]),
    );
    const res = await send('How do I install this project? Look at the files.');
    await checkTurn(res.events, 'final_answer');
    expect(llm.chatRequests).toHaveLength(3);
    const second = llm.chatRequests[1].body.messages;
    const assistant = second.find((m: { role: string }) => m.role === 'assistant');
    expect(assistant.tool_calls[0].id).toBe('call_list');
    const tool = second.find((m: { role: string }) => m.role === 'tool');
    expect(tool).toMatchObject({ tool_call_id: 'call_list' });
    expect(tool.content).toContain('install.md');
    const third = llm.chatRequests[2].body.messages.filter((m: { role: string }) => m.role === 'tool');
    expect(third.map((m: { tool_call_id: string }) => m.tool_call_id)).toEqual(['call_list', 'call_read']);
    expect(third[1].content).toContain('npm install');
    expect(of(res.events, 'tool_progress').map((e) => `${e.data.tool}:${e.data.action}`)).toEqual([
      'list_files:calling', 'list_files:completed', 'read_file:calling', 'read_file:completed',
    ]);
    expect(of(res.events, 'sources')).toHaveLength(1);
    expect(llm.chatRequests[0].body.tools.length).toBeGreaterThanOrEqual(5);
  });

  it('stores what comes between phases with the next write, as two-stage does: tool_calls with its tool phase, sources with done', async () => {
    llm.enqueue(respond.turn([{ toolCall: { name: 'list_files', args: { path: 'guides' }, id: 'call_list' } }]), respond.turn([{ text: 'Two guides.' }]));
    const res = await send('Which guides are there?');
    const { requestId } = await checkTurn(res.events, 'final_answer');
    // one statement, one transaction: rows written together share their xmin
    const rows: Array<{ type: string; tx: string }> = await t.app.get(DataSource).query(`SELECT type, xmin::text AS tx FROM run_events WHERE request_id = $1 ORDER BY seq`, [requestId]);
    const txOf = (type: string, offset = 0) => rows[rows.findIndex((r) => r.type === type) + offset]?.tx;
    expect(rows.map((r) => r.type)).toEqual(expect.arrayContaining(['tool_calls', 'sources', 'done']));
    expect(txOf('tool_calls')).toBe(txOf('tool_calls', 1));
    expect(rows[rows.findIndex((r) => r.type === 'tool_calls') + 1].type).toBe('phase');
    expect(txOf('sources')).toBe(txOf('done'));
    // and each was sent once, in order, after the action phase's end edge
    const types = res.events.map((e) => e.event);
    expect(types.indexOf('sources')).toBe(types.length - 2);
  });

  it('a rag turn: progress from the tool, one sources event with rag counts, confidence and metrics', async () => {
    llm.enqueue(
      respond.turn([{ toolCall: { name: 'rag_query', args: { query: 'how to install orion' } } }]),
      respond.turn([{ text: 'According to the install guide: npm install, then npm start.' }]),
    );
    const res = await send('According to the docs, how do I install Orion?');
    await checkTurn(res.events, 'final_answer');
    const phases = of(res.events, 'tool_phase').map((e) => e.data.message);
    expect(phases).toEqual(expect.arrayContaining(['Searching the knowledge base…', 'Ranking results…']));
    const sources = of(res.events, 'sources');
    expect(sources).toHaveLength(1);
    expect(sources[0].data.ragCount).toBeGreaterThan(0);
    expect(sources[0].data.sourceTypes).toEqual(['rag']);
    expect(['high', 'medium', 'low']).toContain(sources[0].data.confidence);
    expect(sources[0].data.metrics).toBeDefined();
    expect(JSON.stringify(sources[0].data.data)).toContain('install.md');
    // sources come after the tools, before done
    const idx = (type: string) => res.events.findIndex((e) => e.event === type);
    expect(idx('sources')).toBeGreaterThan(res.events.map((e) => e.event).lastIndexOf('tool_progress'));
    // the system prompt listed the knowledge modules
    expect(llm.chatRequests[0].body.messages[0].content).toContain('guides');
  });

  it('runs a parallel two-call step and answers both calls before the next model call', async () => {
    llm.enqueue(
      respond.turn([
        { toolCall: { name: 'read_file', args: { path: 'guides/install.md' }, id: 'c_a' } },
        { toolCall: { name: 'read_file', args: { path: 'guides/roadmap.md' }, id: 'c_b' } },
      ]),
      respond.turn([{ text: 'Both read.' }]),
    );
    const res = await send('Read the install guide and the roadmap files');
    await checkTurn(res.events, 'final_answer');
    const calls = of(res.events, 'tool_calls');
    expect(calls).toHaveLength(1);
    expect((calls[0].data.calls as Array<{ id: string }>).map((c) => c.id)).toEqual(['c_a', 'c_b']);
    const tools = llm.chatRequests[1].body.messages.filter((m: { role: string }) => m.role === 'tool');
    expect(tools.map((m: { tool_call_id: string }) => m.tool_call_id)).toEqual(['c_a', 'c_b']);
    expect(tools[0].content).toContain('Installing Orion');
    expect(tools[1].content).toContain('Roadmap');
  });

  it('ends a model that never stops calling tools after maxIterations model steps with one tool-free answer', async () => {
    // a new call each step that learns something new (a repeated call, or one whose result is one
    // the model already has, is a loop strike: loop-rule and loop-shapes e2e), so only maxIterations stops it
    for (let i = 0; i < 10; i++) llm.enqueue(respond.turn([{ text: `step ${i}. ` }, { toolCall: { name: 'read_file', args: { path: `guides/note-${i}.md` } } }]));
    llm.enqueue(respond.turn([{ text: 'The install guide says: npm install, then npm start.' }]));
    const res = await send('Keep exploring the files');
    const { trace } = await checkTurn(res.events, 'max_iterations');
    expect(llm.chatRequests).toHaveLength(11);
    expect(names(llm.chatRequests[10].body)).toEqual([]);
    expect(trace.filter((x) => x.type === 'llm_request')).toHaveLength(11);
    expect(textOf(res.events)).toContain('step 9.');
    expect(textOf(res.events).endsWith('\n\nThe install guide says: npm install, then npm start.')).toBe(true);
  });

  it('with a smaller maxIterations option, stops sooner', async () => {
    for (let i = 0; i < 3; i++) llm.enqueue(respond.turn([{ toolCall: { name: 'read_file', args: { path: `guides/install.md`, maxBytes: 100 + i } } }]));
    llm.enqueue(respond.turn([{ text: 'Run npm install.' }]));
    const res = await send('loop', { options: { maxIterations: 3 } });
    await checkTurn(res.events, 'max_iterations');
    expect(llm.chatRequests).toHaveLength(4);
    expect(textOf(res.events)).toBe('Run npm install.');
  });

  it('takes the direct path when the conversation turns the orchestrator off: no tools, retrieved context given', async () => {
    llm.enqueue(respond.turn([{ text: 'Start.' }]));
    const first = await send('hello');
    const conversationId = first.events[0].data.conversationId as string;
    const patch = await fetch(`${t.url}/api/chat/conversations/${conversationId}/settings`, { method: 'PATCH', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ orchestratorEnabled: false }) });
    expect(patch.status).toBe(200);
    expect((await patch.json()).settings).toMatchObject({ orchestratorEnabled: false });
    llm.reset();
    llm.enqueue(respond.turn([{ text: 'Run npm install.' }]));
    const res = await send('how do I install orion', { conversationId });
    await checkTurn(res.events, 'final_answer');
    expect(llm.chatRequests).toHaveLength(1);
    const body = llm.chatRequests[0].body;
    expect(names(body)).toEqual([]);
    expect(JSON.stringify(body.messages)).toContain('Run npm install, then npm start.');
    expect(of(res.events, 'tool_progress')).toHaveLength(0);
    expect(of(res.events, 'sources')).toHaveLength(1);
    expect(of(res.events, 'sources')[0].data.ragCount).toBeGreaterThan(0);
    // history was sent too
    expect(JSON.stringify(body.messages)).toContain('hello');
    const bad = await fetch(`${t.url}/api/chat/conversations/${conversationId}/settings`, { method: 'PATCH', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ orchestratorEnabled: 'no' }) });
    expect(bad.status).toBe(400);
  });

  it('/help never reaches the model', async () => {
    const res = await send('/help');
    expect(res.events[0].data.protocol).toBe('command');
    expect(llm.chatRequests).toHaveLength(0);
  });
});

describe('unified route with a model that cannot call tools', () => {
  it('takes the direct path silently and capabilities say why', async () => {
    const llm = await ReplayServer.start();
    const t = await startApp({ LLM_PROVIDER: 'openai', LLM_BASE_URL: llm.openAiBaseUrl, LLM_MODEL: 'scripted-model', LLM_TOOL_CALLING: 'false' });
    try {
      const caps = await (await fetch(`${t.url}/api/config/capabilities`)).json();
      expect(caps).toMatchObject({ toolCalling: false, orchestratorEnabled: true, orchestratorAvailable: false });
      llm.enqueue(respond.turn([{ text: 'Plain answer.' }]));
      const res = await sse(`${t.url}/api/chat/messages`, { body: { content: 'hi' } });
      expect(res.events.at(-1)!.data.stopReason).toBe('final_answer');
      expect(llm.chatRequests[0].body.tools).toBeUndefined();
    } finally {
      await t.close();
      await llm.close();
    }
  });
});
