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

  it('keeps a waiting call on one span through its approval, with the request and decision as span events and no argument values', () => {
    const o = observer(false);
    o.onRecord({ requestId: 'r3', type: 'run_started', details: { protocol: 'two-stage' } }, 1000);
    o.onRecord({ requestId: 'r3', type: 'tool_call', details: { name: 'write_file', callId: 'k1', args: { path: 'notes.md', token: 'hunter2-secret' } } }, 1010);
    o.onRecord({ requestId: 'r3', type: 'tool_result', details: { name: 'write_file', callId: 'k1', outcome: 'approval_required', isError: true } }, 1011);
    // nothing ended yet: the call waits
    expect(exporter.getFinishedSpans()).toHaveLength(0);
    o.onRecord({ requestId: 'r3', type: 'approval_requested', details: { approvalId: 'a1', callId: 'k1', tool: 'write_file', reason: 'configured', arguments: { token: 'hunter2-secret' } } }, 1020);
    o.onRecord({ requestId: 'r3', type: 'approval_decided', details: { approvalId: 'a1', decision: 'approve', keyId: 'key-1', edited: true, waitMs: 480 } }, 1500);
    o.onRecord({ requestId: 'r3', type: 'tool_call', details: { name: 'write_file', callId: 'k1', args: { path: 'notes2.md' } } }, 1501);
    o.onRecord({ requestId: 'r3', type: 'tool_result', details: { name: 'write_file', callId: 'k1', outcome: 'success', isError: false } }, 1530);
    // a second call, declined when its approval expired (no callId on the record: the waiting one)
    o.onRecord({ requestId: 'r3', type: 'tool_call', details: { name: 'write_file', callId: 'k2', args: {} } }, 1600);
    o.onRecord({ requestId: 'r3', type: 'tool_result', details: { name: 'write_file', callId: 'k2', outcome: 'approval_required', isError: true } }, 1601);
    o.onRecord({ requestId: 'r3', type: 'approval_requested', details: { approvalId: 'a2', tool: 'write_file', reason: 'configured' } }, 1602);
    o.onRecord({ requestId: 'r3', type: 'approval_decided', details: { approvalId: 'a2', decision: 'deny', keyId: 'timeout', edited: false } }, 2602);
    o.onRecord({ requestId: 'r3', type: 'tool_call', details: { name: 'write_file', callId: 'k2', args: {} } }, 2603);
    o.onRecord({ requestId: 'r3', type: 'tool_result', details: { name: 'write_file', callId: 'k2', outcome: 'denied', isError: true } }, 2604);
    o.onRecord({ requestId: 'r3', type: 'run_completed', details: { stopReason: 'final_answer' } }, 2700);

    const tools = exporter.getFinishedSpans().filter((s) => s.name === 'execute_tool write_file');
    expect(tools).toHaveLength(2);
    const [approved, denied] = tools.sort((a, b) => a.startTime[0] * 1e9 + a.startTime[1] - (b.startTime[0] * 1e9 + b.startTime[1]));
    const ms = (hr: [number, number]) => hr[0] * 1000 + hr[1] / 1e6;
    // one span from the call to its result, the wait included
    expect(Math.round(ms(approved.endTime) - ms(approved.startTime))).toBe(520);
    expect(approved.attributes['orion.tool.outcome']).toBe('success');
    expect(approved.events.map((e) => [e.name, e.attributes])).toEqual([
      ['approval_requested', { 'orion.approval.id': 'a1', 'orion.approval.reason': 'configured' }],
      ['approval_decided', { 'orion.approval.id': 'a1', 'orion.approval.decision': 'approve', 'orion.approval.edited': true, 'orion.approval.wait_ms': 480 }],
    ]);
    expect(denied.events.map((e) => e.attributes?.['orion.approval.decision'] ?? e.name)).toEqual(['approval_requested', 'timeout']);
    // waited 1000 ms by the records' own times when the record carries no waitMs
    expect(denied.events[1].attributes?.['orion.approval.wait_ms']).toBe(1000);
    expect(denied.attributes['orion.tool.outcome']).toBe('denied');
    expect(denied.status.code).toBe(0);
    expect(JSON.stringify(exporter.getFinishedSpans().map((s) => [s.attributes, s.events]))).not.toContain('hunter2-secret');
  });
});
