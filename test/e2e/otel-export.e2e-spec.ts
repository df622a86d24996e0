import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as nodeHttp from 'node:http';
import { flushTracing, startedInstrumentations, startTracing, stopTracing } from '../../src/observability/tracing';
import type { TestApp } from '../support/app';
import { OtlpReceiver, type ReceivedSpan } from '../support/otlp-receiver';
import { ReplayServer, respond } from '../support/replay-server';
import { sse } from '../support/sse-client';

/**
 * OpenTelemetry export of a two-cycle two-stage turn to a local OTLP/HTTP receiver: the turn,
 * phase, model and tool spans with gen_ai.* attributes, the HTTP spans of the standard
 * instrumentation, the requestId on each; no content unless OTEL_CAPTURE_CONTENT=true; no secret.
 */
describe('OpenTelemetry export (OTLP/HTTP)', () => {
  const API_KEY = 'sk-otel-secret-key-0123456789';
  const SECRET_IN_FILE = 'ship the two-stage protocol';
  let receiver: OtlpReceiver;
  let llm: ReplayServer;
  const saved = { ...process.env };
  let startApp: typeof import('../support/app').startApp;

  beforeAll(async () => {
    receiver = await OtlpReceiver.start();
    llm = await ReplayServer.start();
    // the standard variables, as an operator would set them
    Object.assign(process.env, { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_SERVICE_NAME: 'orion-test', OTEL_BSP_SCHEDULE_DELAY: '50' });
    expect(startTracing()).toBe(true);
    // Jest's module loader hides `http` from the require hook: apply the started instrumentation's patch
    for (const inst of startedInstrumentations()) for (const def of inst.getModuleDefinitions()) if (def.name === 'http') def.patch?.(nodeHttp, process.versions.node);
    // loaded now, as main.ts loads the app only after tracing started
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    startApp = (require('../support/app') as typeof import('../support/app')).startApp;
  });
  afterAll(async () => {
    await stopTracing();
    process.env = saved;
    await llm?.close();
    receiver?.close();
  });

  async function twoCycleTurn(env: Record<string, string>, content: string) {
    const t: TestApp = await startApp({ LLM_PROVIDER: 'openai', LLM_BASE_URL: llm.openAiBaseUrl, LLM_MODEL: 'scripted-model', LLM_API_KEY: API_KEY, TWO_STAGE_ENABLED: 'true', ...env });
    try {
      const project = join(t.workspace, 'default');
      mkdirSync(join(project, 'docs'), { recursive: true });
      writeFileSync(join(project, 'docs', 'roadmap.md'), `# Roadmap\n\nQ1: ${SECRET_IN_FILE}.\n`);
      llm.reset();
      llm.enqueue(
        respond.turn([{ text: 'Looking. ' }, { toolCall: { name: 'list_files', args: { path: 'docs' } } }, { finish: 'tool_calls', usage: { promptTokens: 101, completionTokens: 7 } }]),
        respond.turn([{ toolCall: { name: 'read_file', args: { path: 'docs/roadmap.md' } } }]),
        respond.turn([{ text: 'The roadmap is short.' }]),
      );
      const res = await sse(`${t.url}/api/chat/messages_two_stage`, { body: { content }, timeoutMs: 30_000 });
      expect(res.events.at(-1)!.data.stopReason).toBe('final_answer');
      const requestId = res.events[0].data.requestId as string;
      await flushTracing();
      const spans = (await receiver.spans()).filter((s) => s.attributes['orion.request_id'] === requestId);
      return { requestId, spans, t };
    } finally {
      await t.close();
    }
  }

  const byId = (spans: ReceivedSpan[]) => new Map(spans.map((s) => [s.spanId, s]));

  it('exports turn → phases → chat / execute_tool spans under the HTTP span, with gen_ai attributes and no content', async () => {
    const { requestId, spans } = await twoCycleTurn({}, 'Summarize docs/roadmap.md please');
    const ids = byId(spans);

    const http = spans.filter((s) => s.kind === 2 /* SERVER */);
    expect(http).toHaveLength(1);
    expect(http[0].attributes['http.request.method'] ?? http[0].attributes['http.method']).toBe('POST');

    const turn = spans.filter((s) => s.name === 'invoke_agent orion');
    expect(turn).toHaveLength(1);
    expect(turn[0].parentSpanId).toBe(http[0].spanId);
    expect(turn[0].attributes).toMatchObject({ 'gen_ai.operation.name': 'invoke_agent', 'gen_ai.provider.name': 'openai', 'orion.protocol': 'two-stage', 'orion.stop_reason': 'final_answer', 'orion.request_id': requestId });

    const phases = spans.filter((s) => typeof s.attributes['orion.phase'] === 'string');
    expect(phases.map((p) => p.attributes['orion.phase_index']).sort()).toEqual([1, 2, 3, 4, 5]);
    expect(phases.every((p) => p.parentSpanId === turn[0].spanId)).toBe(true);

    const chats = spans.filter((s) => s.attributes['gen_ai.operation.name'] === 'chat');
    expect(chats).toHaveLength(3);
    for (const c of chats) {
      expect(c.name).toBe('chat scripted-model');
      expect(c.attributes).toMatchObject({ 'gen_ai.provider.name': 'openai', 'gen_ai.request.model': 'scripted-model', 'gen_ai.response.model': 'scripted-model' });
      expect(typeof c.attributes['gen_ai.usage.input_tokens']).toBe('number');
      expect(typeof c.attributes['gen_ai.usage.output_tokens']).toBe('number');
      expect(ids.get(c.parentSpanId!)!.attributes['orion.phase']).toBe('action_phase');
    }
    expect(chats.find((c) => c.attributes['gen_ai.usage.input_tokens'] === 101)?.attributes['gen_ai.usage.output_tokens']).toBe(7);

    const tools = spans.filter((s) => s.attributes['gen_ai.operation.name'] === 'execute_tool');
    expect(tools.map((s) => s.attributes['gen_ai.tool.name'])).toEqual(expect.arrayContaining(['list_files', 'read_file']));
    expect(tools).toHaveLength(2);
    for (const s of tools) {
      expect(String(s.attributes['gen_ai.tool.call.id'])).not.toBe('');
      expect(s.name).toBe(`execute_tool ${String(s.attributes['gen_ai.tool.name'])}`);
      expect(ids.get(s.parentSpanId!)!.attributes['orion.phase']).toBe('tool_phase');
    }

    // no content by default: no content attributes, and neither the prompt nor the file text left
    for (const s of spans) {
      for (const k of ['gen_ai.input.messages', 'gen_ai.output.messages', 'gen_ai.tool.call.arguments', 'gen_ai.tool.call.result']) expect(s.attributes[k]).toBeUndefined();
    }
    const raw = (await receiver.rawBodies()).join('\n');
    expect(raw).not.toContain('Summarize docs/roadmap.md please');
    expect(raw).not.toContain(SECRET_IN_FILE);
    expect(raw).not.toContain('The roadmap is short');
    expect(raw).not.toContain(API_KEY);
    expect(raw).toContain('orion-test');
  });

  it('with OTEL_CAPTURE_CONTENT=true exports prompts, completions and tool arguments/results, still never the key', async () => {
    const { spans } = await twoCycleTurn({ OTEL_CAPTURE_CONTENT: 'true' }, `Summarize the roadmap (my key is ${API_KEY})`);
    const chats = spans.filter((s) => s.attributes['gen_ai.operation.name'] === 'chat');
    const inputs = chats.map((c) => String(c.attributes['gen_ai.input.messages'] ?? '')).join('\n');
    expect(inputs).toContain('Summarize the roadmap');
    expect(chats.map((c) => String(c.attributes['gen_ai.output.messages'] ?? '')).join('\n')).toContain('The roadmap is short.');
    const read = spans.find((s) => s.attributes['gen_ai.tool.name'] === 'read_file')!;
    expect(String(read.attributes['gen_ai.tool.call.arguments'])).toContain('docs/roadmap.md');
    expect(String(read.attributes['gen_ai.tool.call.result'])).toContain(SECRET_IN_FILE);
    expect(JSON.stringify(spans)).not.toContain(API_KEY);
  });

  it('never exports a key passed as ?access_token= on the run-events stream', async () => {
    const ACCESS_KEY = 'orion-otel-query-key-9876543210';
    const t: TestApp = await startApp({ API_KEYS: ACCESS_KEY });
    try {
      const turn = await sse(`${t.url}/api/chat/messages`, { body: { content: 'hello' }, headers: { authorization: `Bearer ${ACCESS_KEY}` }, timeoutMs: 30_000 });
      const requestId = turn.events[0].data.requestId as string;
      const replay = await fetch(`${t.url}/api/chat/runs/${requestId}/events?access_token=${ACCESS_KEY}`);
      expect(replay.status).toBe(200);
      await replay.text();
      await flushTracing();
      const spans = (await receiver.spans()).filter((s) => s.attributes['orion.request_id'] === requestId || String(s.attributes['url.path'] ?? '').includes(requestId));
      expect(spans.some((s) => String(s.attributes['url.path'] ?? '').endsWith('/events'))).toBe(true);
      expect(JSON.stringify(await receiver.spans())).not.toContain(ACCESS_KEY);
    } finally {
      await t.close();
    }
  });
});
