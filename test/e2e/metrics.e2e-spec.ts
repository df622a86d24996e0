import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startApp, type TestApp } from '../support/app';
import { parsePrometheusText, seriesKey } from '../support/prometheus-text';
import { ReplayServer, respond } from '../support/replay-server';
import { sse, type SseEvent } from '../support/sse-client';

/**
 * GET /metrics after scripted turns over real HTTP: each counter moved by exactly what the turns
 * did (the model is a local OpenAI-compatible server playing scripts; the file tools are real).
 */
describe('GET /metrics (Prometheus)', () => {
  const KEY = 'metrics-test-key-0123456789';
  const auth = { Authorization: `Bearer ${KEY}` };
  let llm: ReplayServer;
  let t: TestApp;

  beforeAll(async () => {
    llm = await ReplayServer.start();
    t = await startApp({
      LLM_PROVIDER: 'openai',
      LLM_BASE_URL: llm.openAiBaseUrl,
      LLM_MODEL: 'scripted-model',
      TWO_STAGE_ENABLED: 'true',
      API_KEYS: KEY,
    });
    const project = join(t.workspace, 'default');
    mkdirSync(join(project, 'docs'), { recursive: true });
    writeFileSync(join(project, 'docs', 'roadmap.md'), '# Roadmap\n\nQ1: ship the two-stage protocol.\n');
    writeFileSync(join(project, 'README.md'), '# Demo project\n');
  });
  afterAll(async () => {
    await t?.close();
    await llm?.close();
  });
  beforeEach(() => llm.reset());

  const scrape = async () => {
    const res = await fetch(`${t.url}/metrics`, { headers: auth });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/plain');
    return parsePrometheusText(await res.text());
  };
  const send = (route: string, content: string, options: Record<string, unknown> = {}, onEvent?: (e: SseEvent) => void | 'close') =>
    sse(`${t.url}/api/chat/${route}`, { body: { content, options }, headers: auth, timeoutMs: 30_000, onEvent });
  const doneOf = (events: SseEvent[]) => events.find((e) => e.event === 'done')!.data;

  it('is protected like the API when API_KEYS is set, and says what it is', async () => {
    expect((await fetch(`${t.url}/metrics`)).status).toBe(401);
    expect((await fetch(`${t.url}/metrics`, { headers: { Authorization: 'Bearer wrong' } })).status).toBe(401);
    const res = await fetch(`${t.url}/metrics`, { headers: auth });
    expect(res.status).toBe(200);
    const text = await res.text();
    for (const name of ['orion_turns_total', 'orion_tool_executions_total', 'orion_turn_duration_seconds', 'orion_model_call_duration_seconds', 'orion_open_streams', 'orion_trace_queue_events', 'orion_db_pool_connections', 'orion_db_statements_total', 'orion_llm_retries_total']) {
      expect(text).toContain(`# TYPE ${name} `);
    }
    expect(text).toContain('# TYPE orion_turn_duration_seconds histogram');
    expect(text).not.toContain(KEY);
  });

  it('counts turns, model calls, tool executions, refusals, forced finals and retries by the right amounts', async () => {
    const before = await scrape();

    // two-stage: list_files → read_file → answer (2 tools, 3 model calls)
    llm.enqueue(
      respond.turn([{ text: 'Looking. ' }, { toolCall: { name: 'list_files', args: { path: 'docs' } } }]),
      respond.turn([{ toolCall: { name: 'read_file', args: { path: 'docs/roadmap.md' } } }]),
      respond.turn([{ text: 'Ship the two-stage protocol in Q1.' }]),
    );
    expect(doneOf((await send('messages_two_stage', 'Summarize the roadmap')).events).stopReason).toBe('final_answer');

    // two-stage loop: 1 read_file runs, 3 repeats are refused, a forced final ends it (5 model calls)
    const first = respond.turn([{ toolCall: { name: 'read_file', args: '{"path":"README.md"}' } }]);
    const again = respond.turn([{ toolCall: { name: 'read_file', args: '{ "path" : "README.md" }' } }]);
    llm.enqueue(first, again, again, again, respond.turn([{ text: 'A demo project.' }]));
    expect(doneOf((await send('messages_two_stage', 'What is this?', { maxDuplicateAttempts: 3 })).events).stopReason).toBe('duplicate_limit');

    // unified: the model answers 500 once (retried), then a direct answer (1 model call)
    llm.enqueue(respond.status(500), respond.turn([{ text: 'Hello there.' }]));
    expect(doneOf((await send('messages', 'Hello')).events).stopReason).toBe('final_answer');

    const after = await scrape();
    const delta = (name: string, labels: Record<string, string> = {}) => (after.get(seriesKey(name, labels)) ?? 0) - (before.get(seriesKey(name, labels)) ?? 0);

    expect(delta('orion_turns_total', { protocol: 'two-stage', stop_reason: 'final_answer' })).toBe(1);
    expect(delta('orion_turns_total', { protocol: 'two-stage', stop_reason: 'duplicate_limit' })).toBe(1);
    expect(delta('orion_turns_total', { protocol: 'unified', stop_reason: 'final_answer' })).toBe(1);
    const turnCount = (protocol: string, stop: string) => delta('orion_turn_duration_seconds_count', { protocol, stop_reason: stop });
    expect(turnCount('two-stage', 'final_answer') + turnCount('two-stage', 'duplicate_limit') + turnCount('unified', 'final_answer')).toBe(3);
    expect(delta('orion_time_to_first_chunk_seconds_count', { protocol: 'two-stage' })).toBe(2);
    expect(delta('orion_time_to_first_chunk_seconds_count', { protocol: 'unified' })).toBe(1);

    expect(delta('orion_model_call_duration_seconds_count', { provider: 'openai', model: 'scripted-model', outcome: 'success' })).toBe(3 + 5 + 1);
    expect(delta('orion_llm_retries_total', { provider: 'openai', reason: 'server_error' })).toBe(1);

    expect(delta('orion_tool_executions_total', { tool: 'list_files', outcome: 'success' })).toBe(1);
    expect(delta('orion_tool_executions_total', { tool: 'read_file', outcome: 'success' })).toBe(2);
    expect(delta('orion_tool_duration_seconds_count', { tool: 'read_file' })).toBe(2);
    expect(delta('orion_tool_refusals_total', { tool: 'read_file', reason: 'duplicate' })).toBe(3);
    expect(delta('orion_forced_finals_total', { reason: 'duplicate_limit' })).toBe(1);

    // each turn: its opening, its events, its answer and its closing at least
    expect(delta('orion_db_statements_total')).toBeGreaterThanOrEqual(3 * 4);

    expect(after.get('orion_open_streams')).toBe(0);
    expect(after.get(seriesKey('orion_db_pool_connections', { state: 'total' }))).toBeGreaterThanOrEqual(1);
    expect(after.get('orion_trace_queue_events')).toBeGreaterThanOrEqual(0);
  });

  it('counts a tool name the model made up as "unknown", so model output cannot add label values', async () => {
    const invented = 'drop_every_table_now';
    llm.enqueue(
      respond.turn([{ toolCall: { name: invented, args: { really: true } } }]),
      respond.turn([{ text: 'I cannot do that.' }]),
    );
    expect(doneOf((await send('messages', 'Clean up')).events).stopReason).toBe('final_answer');
    const text = await (await fetch(`${t.url}/metrics`, { headers: auth })).text();
    expect(text).not.toContain(invented);
    const after = await scrape();
    const unknown = [...after.entries()].filter(([k]) => /^orion_tool_(executions|refusals)_total\{/.test(k) && k.includes('tool="unknown"'));
    expect(unknown.reduce((n, [, v]) => n + v, 0)).toBeGreaterThanOrEqual(1);
  });

  it('shows a stream as open while it runs, and the cancelled turn once it ends', async () => {
    const before = await scrape();
    llm.enqueue(respond.hang());
    let requestId = '';
    let during: Map<string, number> | undefined;
    const done = send('messages', 'Wait for it', {}, (e) => {
      if (e.event !== 'start') return;
      requestId = e.data.requestId as string;
      // scrape and cancel from outside the stream's own callback
      setImmediate(async () => {
        during = await scrape();
        await fetch(`${t.url}/api/chat/runs/${requestId}/cancel`, { method: 'POST', headers: auth });
      });
    });
    const res = await done;
    expect(doneOf(res.events).stopReason).toBe('cancelled');
    expect(during!.get('orion_open_streams')).toBe(1);
    const after = await scrape();
    expect(after.get('orion_open_streams')).toBe(0);
    const key = seriesKey('orion_turns_total', { protocol: 'unified', stop_reason: 'cancelled' });
    expect((after.get(key) ?? 0) - (before.get(key) ?? 0)).toBe(1);
  });
});
