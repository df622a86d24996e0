import { context, SpanKind, SpanStatusCode, trace, type Attributes, type Context, type Span } from '@opentelemetry/api';
import type { LlmEvent } from '../llm/llm-events';
import type { TraceRecord } from '../trace/trace-sink.port';
import { approvalDecision } from './approval-decision';

interface TurnSpans {
  turn: Span;
  ctx: Context;
  phases: Map<number, Span>;
  /** the open action/tool phase, parent of model and tool spans */
  phase?: Span;
  model?: Span;
  tools: Map<string, Span>;
  /** tool spans kept open while their call waits for a person, by callId */
  waiting: Map<string, Span>;
  /** approvals asked in this turn: the tool span that waits and when it was asked */
  approvals: Map<string, { span: Span; at: number }>;
}

export interface TurnSpansOptions {
  provider: string;
  model: string;
  /** OTEL_CAPTURE_CONTENT: prompts, completions, tool arguments and results on the spans */
  captureContent: boolean;
  /** masks configured secrets in captured content */
  redact: (text: string) => string;
  /** masks a tool's `x-secret` arguments (the model's calls in the prompt carry them raw) */
  redactToolArgs: (tool: string, args: unknown) => unknown;
}

const MAX_TRACKED = 10_000;
const REQUEST_ID = 'orion.request_id';

/**
 * Turns the trace records of a turn into OpenTelemetry spans (a span per turn, phase, model call
 * and tool call) with the generative-AI semantic-convention attributes, timed by when each record
 * was made. The turn span is a child of the HTTP request that started it, so an exported trace
 * reads POST → turn → phases → chat / execute_tool. Every span carries `orion.request_id`.
 */
export class TurnSpansObserver {
  private readonly tracer = trace.getTracer('orion');
  private readonly turns = new Map<string, TurnSpans>();

  constructor(private readonly o: TurnSpansOptions) {}

  onRecord(rec: TraceRecord, at: number): void {
    const id = rec.requestId;
    if (!id) return;
    const d = rec.details ?? {};
    if (rec.type === 'run_started' || rec.type === 'run_resumed') return this.startTurn(id, d, rec.type === 'run_resumed', at);
    const t = this.turns.get(id);
    if (!t) return;
    switch (rec.type) {
      case 'orchestration_phase_start': {
        const phase = String(d.phase);
        const span = this.child(t, t.turn, `${phase} ${String(d.phaseIndex)}`, at, { [REQUEST_ID]: id, 'orion.phase': phase, 'orion.phase_index': num(d.phaseIndex), 'orion.cycle_index': num(d.cycleIndex) });
        t.phases.set(num(d.phaseIndex), span);
        t.phase = span;
        return;
      }
      case 'orchestration_phase_end': {
        const span = t.phases.get(num(d.phaseIndex));
        if (!span) return;
        if (typeof d.reason === 'string') span.setAttribute('orion.phase_end_reason', d.reason);
        if (d.reason === 'error') span.setStatus({ code: SpanStatusCode.ERROR });
        span.end(at);
        t.phases.delete(num(d.phaseIndex));
        if (t.phase === span) t.phase = undefined;
        return;
      }
      case 'llm_request':
        t.model = this.child(t, t.phase ?? t.turn, `chat ${this.o.model}`, at, {
          [REQUEST_ID]: id,
          'gen_ai.operation.name': 'chat',
          'gen_ai.provider.name': this.o.provider,
          'gen_ai.request.model': this.o.model,
          ...(typeof d.temperature === 'number' ? { 'gen_ai.request.temperature': d.temperature } : {}),
          ...(typeof d.maxTokens === 'number' ? { 'gen_ai.request.max_tokens': d.maxTokens } : {}),
          ...(typeof d.forced === 'string' ? { 'orion.forced_final': d.forced } : {}),
        }, SpanKind.CLIENT);
        return;
      case 'llm_response':
      case 'llm_error':
        return this.endModel(t, rec.type === 'llm_error', d, at);
      case 'tool_call': {
        const name = String(d.name);
        // the call that waited for a person, now run (or declined): its span goes on
        const waited = t.waiting.get(String(d.callId));
        if (waited) {
          t.waiting.delete(String(d.callId));
          t.tools.set(String(d.callId), waited);
          return;
        }
        const span = this.child(t, t.phase ?? t.turn, `execute_tool ${name}`, at, {
          [REQUEST_ID]: id,
          'gen_ai.operation.name': 'execute_tool',
          'gen_ai.tool.name': name,
          'gen_ai.tool.call.id': String(d.callId ?? ''),
          'gen_ai.tool.type': 'function',
          ...(this.o.captureContent ? { 'gen_ai.tool.call.arguments': json(d.args) } : {}),
        });
        t.tools.set(String(d.callId), span);
        return;
      }
      case 'tool_result': {
        const span = t.tools.get(String(d.callId));
        if (!span) return;
        t.tools.delete(String(d.callId));
        if (d.outcome === 'approval_required') {
          // nothing ran yet: the span stays open through the wait, so it shows how long the call took the turn
          t.waiting.set(String(d.callId), span);
          return;
        }
        span.setAttribute('orion.tool.outcome', String(d.outcome));
        if (this.o.captureContent) span.setAttribute('gen_ai.tool.call.result', json(d.output));
        // a person declining a call is a decision, not a failure
        if (d.outcome !== 'denied' && (d.outcome !== 'success' || d.isError === true)) span.setStatus({ code: SpanStatusCode.ERROR, message: String(d.outcome) });
        span.end(at);
        return;
      }
      case 'approval_requested':
        return this.approvalRequested(t, d, at);
      case 'approval_decided':
        return this.approvalDecided(t, d, at);
      case 'duplicate_tool_call':
      case 'tool_call_invalid':
      case 'orchestration_notice':
        t.turn.addEvent(rec.type, { 'gen_ai.tool.name': String(d.name ?? ''), 'orion.code': String(d.code ?? '') }, at);
        return;
      case 'run_completed':
      case 'run_failed':
      case 'run_cancelled':
      case 'run_paused':
        return this.endTurn(id, t, rec.type, d, at);
    }
  }

  /** With OTEL_CAPTURE_CONTENT, the prompt and completion of a model call go on its span. */
  onLlmEvent(e: LlmEvent): void {
    if (e.type !== 'content' || !this.o.captureContent || !e.requestId) return;
    const span = this.turns.get(e.requestId)?.model;
    if (!span) return;
    const messages = e.messages.map((m) => (m.toolCalls ? { ...m, toolCalls: m.toolCalls.map((c) => ({ ...c, arguments: this.maskedArguments(c.name, c.arguments) })) } : m));
    span.setAttribute('gen_ai.input.messages', this.o.redact(JSON.stringify(messages)));
    span.setAttribute('gen_ai.output.messages', this.o.redact(JSON.stringify([{ role: 'assistant', parts: [{ type: 'text', content: e.text }] }])));
  }

  private maskedArguments(tool: string, raw: string): string {
    try {
      return JSON.stringify(this.o.redactToolArgs(tool, JSON.parse(raw)));
    } catch {
      return '[unparsed arguments omitted]';
    }
  }

  /**
   * A span event on the waiting call's span (the turn's when that call is unknown here, e.g. a
   * run taken over from another instance). Never the arguments: they may hold secrets.
   */
  private approvalRequested(t: TurnSpans, d: Record<string, unknown>, at: number): void {
    if (typeof d.approvalId !== 'string') return;
    const callId = typeof d.callId === 'string' ? d.callId : undefined;
    // without a callId, the latest call that waits and has no approval yet
    const asked = new Set([...t.approvals.values()].map((a) => a.span));
    const span = (callId !== undefined ? t.waiting.get(callId) : [...t.waiting.values()].reverse().find((s) => !asked.has(s))) ?? t.turn;
    t.approvals.set(d.approvalId, { span, at });
    span.addEvent('approval_requested', { 'orion.approval.id': d.approvalId, ...(typeof d.reason === 'string' ? { 'orion.approval.reason': d.reason } : {}) }, at);
  }

  private approvalDecided(t: TurnSpans, d: Record<string, unknown>, at: number): void {
    const asked = typeof d.approvalId === 'string' ? t.approvals.get(d.approvalId) : undefined;
    if (typeof d.approvalId === 'string') t.approvals.delete(d.approvalId);
    const waitMs = typeof d.waitMs === 'number' ? d.waitMs : asked ? Math.max(0, at - asked.at) : undefined;
    (asked?.span ?? t.turn).addEvent(
      'approval_decided',
      {
        ...(typeof d.approvalId === 'string' ? { 'orion.approval.id': d.approvalId } : {}),
        'orion.approval.decision': approvalDecision(d) ?? 'unknown',
        'orion.approval.edited': d.edited === true,
        ...(waitMs !== undefined ? { 'orion.approval.wait_ms': waitMs } : {}),
      },
      at,
    );
  }

  private startTurn(id: string, d: Record<string, unknown>, resumed: boolean, at: number): void {
    if (this.turns.size >= MAX_TRACKED) this.forget(this.turns.keys().next().value!);
    // the HTTP request that started the turn names it too, so its span leads to GET /api/trace
    trace.getActiveSpan()?.setAttribute(REQUEST_ID, id);
    const turn = this.tracer.startSpan(
      `invoke_agent orion`,
      {
        startTime: at,
        attributes: {
          [REQUEST_ID]: id,
          'gen_ai.operation.name': 'invoke_agent',
          'gen_ai.agent.name': 'orion',
          'gen_ai.provider.name': this.o.provider,
          'gen_ai.request.model': this.o.model,
          'orion.protocol': String(d.protocol ?? (resumed ? 'two-stage' : 'unknown')),
          'orion.resumed': resumed,
          ...(typeof d.conversationId === 'string' ? { 'gen_ai.conversation.id': d.conversationId } : {}),
          ...(typeof d.mode === 'string' ? { 'orion.mode': d.mode } : {}),
        },
      },
      context.active(),
    );
    this.turns.set(id, { turn, ctx: trace.setSpan(context.active(), turn), phases: new Map(), tools: new Map(), waiting: new Map(), approvals: new Map() });
  }

  private endModel(t: TurnSpans, failed: boolean, d: Record<string, unknown>, at: number): void {
    const span = t.model;
    if (!span) return;
    t.model = undefined;
    span.setAttribute('gen_ai.response.model', this.o.model);
    if (typeof d.finishReason === 'string') span.setAttribute('gen_ai.response.finish_reasons', [d.finishReason]);
    const usage = d.usage as { promptTokens?: unknown; completionTokens?: unknown } | null | undefined;
    if (usage && typeof usage.promptTokens === 'number') span.setAttribute('gen_ai.usage.input_tokens', usage.promptTokens);
    if (usage && typeof usage.completionTokens === 'number') span.setAttribute('gen_ai.usage.output_tokens', usage.completionTokens);
    if (failed) {
      span.setAttribute('error.type', String(d.code ?? 'error'));
      span.setStatus({ code: SpanStatusCode.ERROR, message: String(d.code ?? 'error') });
    }
    span.end(at);
  }

  private endTurn(id: string, t: TurnSpans, type: string, d: Record<string, unknown>, at: number): void {
    const stopReason = typeof d.stopReason === 'string' ? d.stopReason : type === 'run_paused' ? 'paused' : type === 'run_cancelled' ? 'cancelled' : 'error';
    t.turn.setAttribute('orion.stop_reason', stopReason);
    if (type === 'run_failed') t.turn.setStatus({ code: SpanStatusCode.ERROR, message: stopReason });
    this.forget(id, at);
  }

  /** Ends a turn's spans (any left open end with it) and lets it go. */
  private forget(id: string, at?: number): void {
    const t = this.turns.get(id);
    if (!t) return;
    this.turns.delete(id);
    for (const s of t.tools.values()) s.end(at);
    for (const s of t.waiting.values()) s.end(at);
    t.model?.end(at);
    for (const s of t.phases.values()) s.end(at);
    t.turn.end(at);
  }

  private child(t: TurnSpans, parent: Span, name: string, at: number, attributes: Attributes, kind = SpanKind.INTERNAL): Span {
    return this.tracer.startSpan(name, { startTime: at, attributes, kind }, trace.setSpan(t.ctx, parent));
  }
}

function num(v: unknown): number {
  return typeof v === 'number' ? v : Number(v ?? 0);
}

function json(v: unknown): string {
  return typeof v === 'string' ? v : JSON.stringify(v ?? null);
}
