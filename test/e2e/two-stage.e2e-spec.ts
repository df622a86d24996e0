import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startApp, type TestApp } from '../support/app';
import { ReplayServer, respond, times } from '../support/replay-server';
import { checkEnvelope, sse, type SseEvent } from '../support/sse-client';
import { waitFor } from '../support/wait-for';

/**
 * Issue #4 over real HTTP and SSE: the OpenAI-compatible adapter talks to a local provider
 * server that plays scripted turns; the real built-in file tools run against a workspace.
 */
describe('POST /api/chat/messages_two_stage', () => {
  let llm: ReplayServer;
  let t: TestApp;

  beforeAll(async () => {
    llm = await ReplayServer.start();
    t = await startApp({
      LLM_PROVIDER: 'openai',
      LLM_BASE_URL: llm.openAiBaseUrl,
      LLM_MODEL: 'scripted-model',
      LLM_API_KEY: 'sk-test-secret-key-0123456789',
      TWO_STAGE_ENABLED: 'true',
      LLM_IDLE_TIMEOUT_MS: '2000',
    });
    const project = join(t.workspace, 'default');
    mkdirSync(join(project, 'docs'), { recursive: true });
    writeFileSync(join(project, 'docs', 'roadmap.md'), '# Roadmap\n\nQ1: ship the two-stage protocol.\n');
    writeFileSync(join(project, 'README.md'), '# Demo project\n');
  });
  afterAll(async () => {
    await t.close();
    await llm.close();
  });
  beforeEach(() => llm.reset());

  const send = (content: string, options: Record<string, unknown> = {}) =>
    sse(`${t.url}/api/chat/messages_two_stage`, { body: { content, options }, timeoutMs: 30_000 });
  const of = (events: SseEvent[], type: string) => events.filter((e) => e.event === type);
  const textOf = (events: SseEvent[]) => of(events, 'chunk').map((e) => e.data.content).join('');
  const traceOf = async (requestId: string, type?: string) =>
    (await (await fetch(`${t.url}/api/trace?requestId=${requestId}${type ? `&type=${type}` : ''}`)).json()) as Array<{ type: string; details: Record<string, unknown> }>;

  /** Exactly one done, last; envelope intact; exactly one stored assistant message matching the stream. */
  async function checkTurn(events: SseEvent[], stopReason: string, status = 'complete') {
    checkEnvelope(events);
    expect(events[0].event).toBe('start');
    expect(events[0].data.protocol).toBe('two-stage');
    const done = of(events, 'done');
    expect(done).toHaveLength(1);
    expect(events.at(-1)!.event).toBe('done');
    expect(done[0].data.stopReason).toBe(stopReason);
    expect(done[0].data.fullContent).toBe(textOf(events));
    const conversationId = events[0].data.conversationId as string;
    const requestId = events[0].data.requestId as string;
    const msgs = await (await fetch(`${t.url}/api/chat/conversations/${conversationId}/messages`)).json();
    const assistant = msgs.filter((m: { role: string; requestId: string }) => m.role === 'assistant' && m.requestId === requestId);
    expect(assistant).toHaveLength(1);
    expect(assistant[0]).toMatchObject({ id: done[0].data.messageId, content: textOf(events), status });
    const run = await (await fetch(`${t.url}/api/chat/runs/${requestId}`)).json();
    expect(run.lastSeq).toBe(done[0].data.seq);
    return { requestId, conversationId, done: done[0].data };
  }

  it('chains list_files → read_file → answer with phase metadata, tool results as system messages', async () => {
    llm.enqueue(
      respond.turn([{ text: 'Looking. ' }, { toolCall: { name: 'list_files', args: { path: 'docs' } } }]),
      respond.turn([{ toolCall: { name: 'read_file', args: { path: 'docs/roadmap.md' } } }]),
      respond.turn([{ text: 'The roadmap: ship the two-stage protocol in Q1.' }]),
    );
    const res = await send('Summarize docs/roadmap.md');
    expect(res.status).toBe(200);
    const { requestId } = await checkTurn(res.events, 'final_answer');
    expect(textOf(res.events)).toBe('Looking. \n\nThe roadmap: ship the two-stage protocol in Q1.');
    const phases = of(res.events, 'phase').map((e) => `${e.data.status}:${e.data.phase}:${e.data.phaseIndex}:${e.data.cycleIndex}`);
    expect(phases).toEqual([
      'start:action_phase:1:0', 'end:action_phase:1:0', 'start:tool_phase:2:1', 'end:tool_phase:2:1',
      'start:action_phase:3:1', 'end:action_phase:3:1', 'start:tool_phase:4:2', 'end:tool_phase:4:2',
      'start:action_phase:5:2', 'end:action_phase:5:2',
    ]);
    // every event carries the phase it happened in
    const toolProgress = of(res.events, 'tool_progress');
    expect(toolProgress.map((e) => `${e.data.tool}:${e.data.action}:${e.data.phase}:${e.data.cycleIndex}`)).toEqual([
      'list_files:calling:tool_phase:1', 'list_files:completed:tool_phase:1', 'read_file:calling:tool_phase:2', 'read_file:completed:tool_phase:2',
    ]);
    expect(toolProgress.every((e) => e.data.output === undefined)).toBe(true);
    // the model saw the results as system messages, after its system prompt
    const third = llm.chatRequests[2].body;
    expect(third.messages[0].role).toBe('system');
    expect(third.messages[1].role).toBe('system');
    expect(third.messages[1].content).toContain('roadmap.md');
    expect(third.messages[2].content).toContain('Q1: ship the two-stage protocol.');
    expect(third.tools.map((x: { function: { name: string } }) => x.function.name)).toEqual(expect.arrayContaining(['list_files', 'read_file']));
    expect(third.temperature).toBe(0.3);
    expect(third.max_tokens ?? third.max_completion_tokens).toBe(8192);

    const trace = await traceOf(requestId);
    const count = (type: string) => trace.filter((x) => x.type === type).length;
    expect(count('tool_call')).toBe(2);
    expect(count('tool_result')).toBe(2);
    expect(count('orchestration_phase_start')).toBe(5);
    expect(count('orchestration_phase_end')).toBe(5);
    expect(count('llm_request')).toBe(3);
    expect(trace.find((x) => x.type === 'orchestration_phase_end')!.details).toEqual({ phase: 'action_phase', phaseIndex: 1, cycleIndex: 0, reason: 'tool_call' });
    // no secret anywhere in the trace
    expect(JSON.stringify(trace)).not.toContain('sk-test-secret-key');
  });

  it('refuses a DeepSeek-style loop whose repeated call changes key order and spacing, then forces the answer', async () => {
    const first = respond.turn([{ toolCall: { name: 'read_file', args: '{"path":"README.md","maxBytes":500}' } }]);
    const again = respond.turn([{ toolCall: { name: 'read_file', args: '{ "maxBytes": 500 ,  "path" : "README.md" }' } }]);
    llm.enqueue(first, again, again, again, respond.turn([{ text: 'It is a demo project.' }]));
    const res = await send('What is this project?', { maxDuplicateAttempts: 3 });
    const { requestId } = await checkTurn(res.events, 'duplicate_limit');
    expect(of(res.events, 'notice').map((e) => e.data.code)).toEqual(['duplicate_tool_call', 'duplicate_tool_call', 'duplicate_tool_call', 'duplicate_limit_reached']);
    expect(of(res.events, 'notice')[0].data.message).toContain('Duplicate tool call detected');
    expect(of(res.events, 'notice')[3].data.message).toContain('Maximum duplicate tool call attempts exceeded');
    expect((await traceOf(requestId, 'tool_result')).length).toBe(1);
    expect((await traceOf(requestId, 'duplicate_tool_call')).length).toBe(3);
    const last = llm.chatRequests[4].body;
    expect(last.tools === undefined || last.tool_choice === 'none').toBe(true);
  });

  it('keeps a refused call in its action phase: the same phaseIndex goes on, only the executed tool opens a tool phase', async () => {
    const read = respond.turn([{ toolCall: { name: 'read_file', args: { path: 'README.md' } } }]);
    llm.enqueue(read, read, read, respond.turn([{ text: 'It is a demo project.' }]));
    const res = await send('What is this project?', { maxDuplicateAttempts: 5 });
    const { requestId } = await checkTurn(res.events, 'final_answer');
    const phases = of(res.events, 'phase').map((e) => `${e.data.status}:${e.data.phase}:${e.data.phaseIndex}:${e.data.reason ?? ''}`);
    // action 1 → tool 2 → action 3 (two refusals inside it, then the answer)
    expect(phases).toEqual(['start:action_phase:1:', 'end:action_phase:1:tool_call', 'start:tool_phase:2:', 'end:tool_phase:2:success', 'start:action_phase:3:', 'end:action_phase:3:final_answer']);
    const notices = of(res.events, 'notice');
    expect(notices.map((e) => e.data.code)).toEqual(['duplicate_tool_call', 'duplicate_tool_call']);
    expect(notices.every((e) => e.data.phaseIndex === 3 && e.data.phase === 'action_phase')).toBe(true);
    expect(of(res.events, 'tool_calls').map((e) => e.data.phaseIndex)).toEqual([1, 3, 3]);
    // the trace still shows each refusal, in phase 3
    const refusals = await traceOf(requestId, 'duplicate_tool_call');
    expect(refusals).toHaveLength(2);
    expect(llm.chatRequests).toHaveLength(4);
  });

  it('stops a budget-exhausting model after exactly maxPhaseCycles tools', async () => {
    llm.enqueue(
      respond.turn([{ toolCall: { name: 'read_file', args: { path: 'README.md' } } }]),
      respond.turn([{ toolCall: { name: 'read_file', args: { path: 'docs/roadmap.md' } } }]),
      respond.turn([{ toolCall: { name: 'list_files', args: { recursive: true } } }]),
      respond.turn([{ text: 'Budget reached; here is what I found.' }]),
    );
    const res = await send('Explore everything');
    const { requestId } = await checkTurn(res.events, 'cycle_budget');
    const notices = of(res.events, 'notice');
    expect(notices.map((e) => e.data.code)).toEqual(['cycle_budget_reached']);
    expect(notices[0].data.message).toContain('Maximum tool execution cycles (3) reached');
    expect((await traceOf(requestId, 'tool_result')).length).toBe(3);
    expect(llm.chatRequests).toHaveLength(4);
  });

  it('runs only the first of two calls in one response', async () => {
    llm.enqueue(
      respond.turn([{ toolCall: { name: 'list_files', args: {} } }, { toolCall: { name: 'read_file', args: { path: 'README.md' } } }]),
      respond.turn([{ text: 'Listed.' }]),
    );
    const res = await send('List and read');
    const { requestId } = await checkTurn(res.events, 'final_answer');
    const calls = of(res.events, 'tool_calls');
    expect(calls).toHaveLength(1);
    expect((calls[0].data.calls as Array<{ name: string }>).map((c) => c.name)).toEqual(['list_files']);
    const results = await traceOf(requestId, 'tool_result');
    expect(results.map((r) => r.details.name ?? r.details.toolName)).toEqual(['list_files']);
  });

  it('merges one-character argument fragments', async () => {
    llm.enqueue(
      respond.turn([{ toolCall: { name: 'read_file', args: { path: 'docs/roadmap.md', maxBytes: 64 } } }], { argumentFragmentSize: 1 }),
      respond.turn([{ text: 'Read.' }]),
    );
    const res = await send('Read the roadmap', { debugShowToolResults: true });
    await checkTurn(res.events, 'final_answer');
    const completed = of(res.events, 'tool_progress').find((e) => e.data.action === 'completed')!;
    expect(completed.data.params).toEqual({ path: 'docs/roadmap.md', maxBytes: 64 });
    expect(JSON.stringify(completed.data.output)).toContain('Roadmap');
  });

  it('does not run malformed arguments and tells the model why once', async () => {
    llm.enqueue(
      respond.turn([{ toolCall: { name: 'read_file', args: '{"path": "README.md"' } }]),
      respond.turn([{ toolCall: { name: 'read_file', args: '{"path": "README.md"' } }]),
      respond.turn([{ text: 'I could not read it.' }]),
    );
    const res = await send('Read README', { maxDuplicateAttempts: 1 });
    const { requestId } = await checkTurn(res.events, 'duplicate_limit');
    expect((await traceOf(requestId, 'tool_result')).length).toBe(0);
    const told = JSON.stringify(llm.chatRequests[1].body.messages);
    expect(told).toContain('Tool call not run');
    expect(of(res.events, 'notice').map((e) => e.data.code)).toContain('duplicate_limit_reached');
  });

  it('ends a model that answers 500 (after two retries) with an error event and one done', async () => {
    llm.enqueue(...times(3, respond.status(500)));
    const res = await send('Hello?');
    await checkTurn(res.events, 'error', 'error');
    const err = of(res.events, 'error');
    expect(err).toHaveLength(1);
    expect(err[0].data).toMatchObject({ code: 'llm_server_error', retryable: true });
    expect(llm.chatRequests).toHaveLength(3);
  });

  it('keeps what was streamed when the model stream is cut mid-answer', async () => {
    llm.enqueue(respond.turn([{ text: 'The first part ' }, { text: 'and the second ' }, { text: 'never arrives' }], { faults: { resetAfter: 3 } }));
    const res = await send('Tell me a story');
    await checkTurn(res.events, 'error', 'error');
    expect(textOf(res.events).length).toBeGreaterThan(0);
    expect(textOf(res.events)).not.toContain('never arrives');
    expect(of(res.events, 'error')).toHaveLength(1);
  });

  it('survives NUL characters from the model and its tool calls: stored equals streamed, trace kept', async () => {
    llm.enqueue(
      respond.turn([{ text: 'Odd\u0000byte. ' }, { toolCall: { name: 'read_file', args: { path: 'bad\u0000name.md' } } }]),
      respond.turn([{ text: 'Done\u0000.' }]),
    );
    const res = await send('read a strange file');
    const { requestId } = await checkTurn(res.events, 'final_answer');
    expect(textOf(res.events)).toBe('Odd\uFFFDbyte. \n\nDone\uFFFD.');
    const trace = await traceOf(requestId);
    expect(trace.filter((x) => x.type === 'tool_call')).toHaveLength(1);
    expect(trace.filter((x) => x.type === 'run_completed')).toHaveLength(1);
  });

  it('never streams or stores the configured API key, even when the model repeats it', async () => {
    llm.enqueue(respond.turn([{ text: 'Your key is sk-test-secret-key-0123456789, right?' }]));
    const res = await send('what is my key?');
    await checkTurn(res.events, 'final_answer');
    expect(JSON.stringify(res.events)).not.toContain('sk-test-secret-key-0123456789');
    expect(textOf(res.events)).toContain('[REDACTED]');
  });

  it('refuses NUL characters in client input with a 400', async () => {
    const post = (path: string, body: unknown, method = 'POST') =>
      fetch(`${t.url}${path}`, { method, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    expect((await post('/api/chat/messages_two_stage', { content: 'a\u0000b' })).status).toBe(400);
    expect((await fetch(`${t.url}/api/trace?type=%00`)).status).toBe(400);
    expect((await fetch(`${t.url}/api/trace?requestId=%00`)).status).toBe(400);
    expect((await fetch(`${t.url}/api/knowledge/search?projectId=default&q=%00`)).status).toBe(400);
    const res = await send('hello');
    const conversationId = res.events[0].data.conversationId as string;
    const patch = await post(`/api/chat/conversations/${conversationId}/settings`, { customInstructions: 'be\u0000nice' }, 'PATCH');
    expect(patch.status).toBe(400);
    expect((await patch.json()).message).toMatch(/NUL/);
  });

  it('aborts the model request and stores the partial answer when the client disconnects', async () => {
    llm.enqueue(respond.turn([{ text: 'one ' }, { text: 'two ' }, { text: 'three ' }, { text: 'four' }], { faults: { delayMs: 400 } }));
    const res = await sse(`${t.url}/api/chat/messages_two_stage`, {
      body: { content: 'Count slowly' },
      onEvent: (e) => (e.event === 'chunk' ? 'close' : undefined),
    });
    const requestId = res.events[0].data.requestId as string;
    const conversationId = res.events[0].data.conversationId as string;
    const run = await waitFor(
      async () => {
        const r = (await (await fetch(`${t.url}/api/chat/runs/${requestId}`)).json()) as { status: string };
        return r.status === 'running' ? undefined : r;
      },
      { what: 'the run to end after the client left' },
    );
    expect(run.status).toBe('cancelled');
    const msgs = await (await fetch(`${t.url}/api/chat/conversations/${conversationId}/messages`)).json();
    const assistant = msgs.filter((m: { role: string }) => m.role === 'assistant');
    expect(assistant).toHaveLength(1);
    expect(assistant[0].status).toBe('cancelled');
    expect(assistant[0].content.startsWith('one ')).toBe(true);
    expect(assistant[0].content).not.toContain('four');
    // the stored stream ends in one done with stopReason cancelled
    const trace = await traceOf(requestId, 'run_cancelled');
    expect(trace).toHaveLength(1);
  });
});
