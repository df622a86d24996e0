import { trace } from '@opentelemetry/api';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { redactString } from '../common/util/redact.util';
import { TurnSpansObserver } from './turn-spans.observer';

describe('TurnSpansObserver', () => {
  const exporter = new InMemorySpanExporter();
  beforeAll(() => {
    trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }));
  });
  afterAll(() => trace.disable());
  beforeEach(() => exporter.reset());

  const observer = (captureContent: boolean) =>
    new TurnSpansObserver({
      provider: 'openai',
      model: 'm1',
      captureContent,
      redact: (text) => redactString(text, ['sk-configured-key-123456']),
      // the tool's schema marks `token` as x-secret
      redactToolArgs: (_tool, args) => ({ ...(args as object), token: '[REDACTED]' }),
    });

  it('times spans by the records, nests them, masks secret arguments in captured prompts, ends what a turn left open', () => {
    const o = observer(true);
    const t0 = Date.now();
    o.onRecord({ requestId: 'r1', type: 'run_started', details: { protocol: 'unified', conversationId: 'c1' } }, t0);
    o.onRecord({ requestId: 'r1', type: 'orchestration_phase_start', details: { phase: 'action_phase', phaseIndex: 1, cycleIndex: 0 } }, t0 + 10);
    o.onRecord({ requestId: 'r1', type: 'llm_request', details: { temperature: 0.2 } }, t0 + 20);
    o.onLlmEvent({
      type: 'content',
      provider: 'openai',
      model: 'm1',
      requestId: 'r1',
      messages: [
        { role: 'user', content: 'use sk-configured-key-123456 please' },
        { role: 'assistant', content: null, toolCalls: [{ id: 'c1', name: 'vault', arguments: '{"token":"hunter2-secret","q":"x"}' }] },
      ],
      text: 'done',
    });
    o.onRecord({ requestId: 'r1', type: 'llm_error', details: { code: 'timeout', message: 'slow' } }, t0 + 120);
    o.onRecord({ requestId: 'r1', type: 'tool_call', details: { name: 'list_files', callId: 'k1', args: {} } }, t0 + 130);
    // no tool_result: the turn ends with the tool span still open
    o.onRecord({ requestId: 'r1', type: 'run_failed', details: { stopReason: 'error' } }, t0 + 200);

    const spans = exporter.getFinishedSpans();
    const by = (name: string) => spans.find((s) => s.name === name)!;
    const turn = by('invoke_agent orion');
    const phase = by('action_phase 1');
    const chat = by('chat m1');
    const tool = by('execute_tool list_files');
    expect(spans).toHaveLength(4);
    expect(phase.parentSpanContext?.spanId).toBe(turn.spanContext().spanId);
    expect(chat.parentSpanContext?.spanId).toBe(phase.spanContext().spanId);
    expect(chat.attributes['error.type']).toBe('timeout');
    expect(chat.status.code).toBe(2);
    // 100 ms between llm_request and llm_error
    const ms = (hr: [number, number]) => hr[0] * 1000 + hr[1] / 1e6;
    expect(Math.round(ms(chat.endTime) - ms(chat.startTime))).toBe(100);
    expect(ms(tool.endTime)).toBeCloseTo(ms(turn.endTime), 0);
    expect(turn.attributes).toMatchObject({ 'orion.request_id': 'r1', 'gen_ai.conversation.id': 'c1', 'orion.stop_reason': 'error' });
    const input = String(chat.attributes['gen_ai.input.messages']);
    expect(input).not.toContain('hunter2-secret');
    expect(input).not.toContain('sk-configured-key-123456');
    expect(input).toContain('[REDACTED]');
  });

  it('exports no content attributes when capture is off', () => {
    const o = observer(false);
    o.onRecord({ requestId: 'r2', type: 'run_started', details: { protocol: 'two-stage' } }, 1);
    o.onRecord({ requestId: 'r2', type: 'llm_request', details: {} }, 2);
    o.onLlmEvent({ type: 'content', provider: 'openai', model: 'm1', requestId: 'r2', messages: [{ role: 'user', content: 'private question' }], text: 'private answer' });
    o.onRecord({ requestId: 'r2', type: 'llm_response', details: { usage: { promptTokens: 3, completionTokens: 4 } } }, 3);
    o.onRecord({ requestId: 'r2', type: 'tool_call', details: { name: 'read_file', callId: 'k', args: { path: 'secret.md' } } }, 4);
    o.onRecord({ requestId: 'r2', type: 'tool_result', details: { name: 'read_file', callId: 'k', outcome: 'success', output: 'file text' } }, 5);
    o.onRecord({ requestId: 'r2', type: 'run_completed', details: { stopReason: 'final_answer' } }, 6);
    const text = JSON.stringify(exporter.getFinishedSpans().map((s) => s.attributes));
    for (const s of ['private question', 'private answer', 'secret.md', 'file text']) expect(text).not.toContain(s);
    expect(exporter.getFinishedSpans().find((s) => s.name === 'chat m1')!.attributes['gen_ai.usage.output_tokens']).toBe(4);
  });
});
