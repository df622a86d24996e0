import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { startApp, type TestApp } from '../support/app';
import { ReplayServer, respond } from '../support/replay-server';
import { checkEnvelope, sse, type SseEvent } from '../support/sse-client';

/**
 * Issue #29 (3) over real HTTP and SSE, the OpenAI-compatible adapter reading a scripted model:
 * the two-stage action phase ends at its deciding call (nothing of that response after it
 * reaches the stream, the stored answer or the trace), and on both routes nothing a response
 * sends after its finish_reason is run or shown.
 */
describe('the deciding call and the finish end a model response', () => {
  let llm: ReplayServer;
  let t: TestApp;
  let ds: DataSource;
  const MARKER = 'TRAILING-MARKER';

  beforeAll(async () => {
    llm = await ReplayServer.start();
    t = await startApp({ LLM_PROVIDER: 'openai', LLM_BASE_URL: llm.openAiBaseUrl, LLM_MODEL: 'scripted-model', TWO_STAGE_ENABLED: 'true' });
    ds = t.app.get(DataSource);
    mkdirSync(join(t.workspace, 'default'), { recursive: true });
    writeFileSync(join(t.workspace, 'default', 'README.md'), '# Demo project\n');
  });
  afterAll(async () => {
    await t.close();
    await llm.close();
  });
  beforeEach(() => llm.reset());

  const ROUTES = { 'two-stage': '/api/chat/messages_two_stage', unified: '/api/chat/messages' } as const;
  const send = (route: keyof typeof ROUTES, content: string) => sse(`${t.url}${ROUTES[route]}`, { body: { content }, timeoutMs: 30_000 });
  const of = (events: SseEvent[], type: string) => events.filter((e) => e.event === type);
  const textOf = (events: SseEvent[]) => of(events, 'chunk').map((e) => e.data.content).join('');
  const traceOf = async (requestId: string) => (await (await fetch(`${t.url}/api/trace?requestId=${requestId}&limit=5000`)).json()) as Array<{ type: string; details: Record<string, unknown> }>;
  const chunk = (delta: Record<string, unknown>, finish: string | null = null) => ({ id: 'c', object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: finish }] });

  /** One done, last; the stored answer is the streamed text; returns what the turn left behind. */
  async function turnRecord(events: SseEvent[], protocol: string) {
    checkEnvelope(events);
    expect(events[0].data.protocol).toBe(protocol);
    expect(of(events, 'done')).toHaveLength(1);
    const done = events.at(-1)!;
    expect(done.event).toBe('done');
    expect(done.data.fullContent).toBe(textOf(events));
    const requestId = events[0].data.requestId as string;
    const msgs = (await (await fetch(`${t.url}/api/chat/conversations/${events[0].data.conversationId}/messages`)).json()) as Array<{ role: string; requestId: string; content: string }>;
    const stored = msgs.filter((m) => m.role === 'assistant' && m.requestId === requestId);
    expect(stored).toHaveLength(1);
    expect(stored[0].content).toBe(textOf(events));
    const trace = await traceOf(requestId);
    const traceRows = (await ds.query(`SELECT type, details::text AS details FROM trace_events WHERE request_id = $1`, [requestId])) as Array<{ type: string; details: string }>;
    const storedEvents = (await ds.query(`SELECT data::text AS data FROM run_event_list WHERE request_id = $1`, [requestId])) as Array<{ data: string }>;
    expect(storedEvents.length).toBe(events.length);
    return { requestId, done: done.data, stored: stored[0], trace, traceRows, storedEvents };
  }

  describe('two-stage: a complete call followed by text in the same response', () => {
    it('streams, stores and traces nothing of the text after the call (the call closes at the finish)', async () => {
      llm.enqueue(
        respond.turn([{ text: 'Reading it. ' }, { toolCall: { name: 'read_file', args: { path: 'README.md' } } }, { text: `${MARKER} and more words ` }, { text: `${MARKER} again` }], { argumentFragmentSize: 5 }),
        respond.turn([{ text: 'It is a demo project.' }]),
      );
      const res = await send('two-stage', 'What is this project?');
      expect(res.status).toBe(200);
      const r = await turnRecord(res.events, 'two-stage');
      expect(textOf(res.events)).toBe('Reading it. \n\nIt is a demo project.');
      expect(r.done.stopReason).toBe('final_answer');
      expect(JSON.stringify(res.events)).not.toContain(MARKER);
      expect(r.stored.content).not.toContain(MARKER);
      expect(JSON.stringify(r.trace)).not.toContain(MARKER);
      expect(JSON.stringify(r.traceRows)).not.toContain(MARKER);
      expect(JSON.stringify(r.storedEvents)).not.toContain(MARKER);
      // the call ran, once, and the next model call did not see the dropped text either
      expect(r.trace.filter((x) => x.type === 'tool_result').map((x) => x.details.name ?? x.details.toolName)).toEqual(['read_file']);
      expect(JSON.stringify(llm.chatRequests[1].body.messages)).not.toContain(MARKER);
      // only the text before the call is counted
      expect(r.trace.find((x) => x.type === 'llm_response')!.details).toMatchObject({ textChars: 'Reading it. '.length });
    });

    it('drops the text after the call when the next call is its boundary (upstream aborted there)', async () => {
      llm.enqueue(
        respond.turn([{ toolCall: { name: 'list_files', args: {} } }, { text: MARKER }, { toolCall: { name: 'read_file', args: { path: 'README.md' } } }, { text: MARKER }]),
        respond.turn([{ text: 'Listed.' }]),
      );
      const res = await send('two-stage', 'List the files');
      const r = await turnRecord(res.events, 'two-stage');
      expect(textOf(res.events)).toBe('Listed.');
      expect(JSON.stringify(res.events)).not.toContain(MARKER);
      expect(JSON.stringify(r.traceRows)).not.toContain(MARKER);
      expect(of(res.events, 'tool_calls').flatMap((e) => (e.data.calls as Array<{ name: string }>).map((c) => c.name))).toEqual(['list_files']);
      expect(r.trace.find((x) => x.type === 'llm_response')!.details).toMatchObject({ stoppedEarly: true, textChars: 0 });
    });
  });

  describe.each(['two-stage', 'unified'] as const)('%s: a tool call after finish_reason "stop"', (route) => {
    it('is not run; the answer stands and the trace has the notice deltas_after_finish', async () => {
      llm.enqueue(
        respond.sse([
          chunk({ role: 'assistant', content: 'All done.' }),
          chunk({}, 'stop'),
          chunk({ tool_calls: [{ index: 0, id: 'call_late', type: 'function', function: { name: 'list_files', arguments: '' } }] }),
          chunk({ tool_calls: [{ index: 0, function: { arguments: '{"path":"."}' } }] }),
          chunk({ content: ` ${MARKER}` }),
          { id: 'c', object: 'chat.completion.chunk', choices: [], usage: { prompt_tokens: 9, completion_tokens: 4, total_tokens: 13 } },
          '[DONE]',
        ]),
      );
      const res = await send(route, 'Are you done?');
      expect(res.status).toBe(200);
      const r = await turnRecord(res.events, route);
      expect(textOf(res.events)).toBe('All done.');
      expect(r.done.stopReason).toBe('final_answer');
      expect(of(res.events, 'tool_calls')).toEqual([]);
      expect(of(res.events, 'tool_progress')).toEqual([]);
      expect(r.trace.filter((x) => ['tool_call', 'tool_result'].includes(x.type))).toEqual([]);
      expect(llm.chatRequests).toHaveLength(1);
      expect(JSON.stringify(r.traceRows)).not.toContain(MARKER);
      const notices = r.trace.filter((x) => x.type === 'orchestration_notice');
      expect(notices.map((x) => x.details)).toEqual([{ code: 'deltas_after_finish', phaseIndex: 1, finishReason: 'stop', ignored: { text: 1, reasoning: 0, toolCalls: 2 } }]);
      // the notice is the trace's only word on it: clients see an ordinary answer
      expect(of(res.events, 'notice')).toEqual([]);
    });
  });
});
