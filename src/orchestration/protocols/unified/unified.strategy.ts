import { Injectable } from '@nestjs/common';
import { addUsage, emptyUsage, type ProtocolEvent } from '../../protocol-event';
import type { ProtocolExecutionContext, ProtocolStrategy } from '../../protocol-strategy';
import { MAX_RESPONSE_TOKENS, temperatureFor, UNIFIED_SYSTEM_PROMPT } from '../prompts';

/**
 * The unified route. Walking skeleton of issue #2: one streamed, tool-free answer inside one
 * action phase. Issue #5 turns it into the agentic loop over every message.
 */
@Injectable()
export class UnifiedStrategy implements ProtocolStrategy {
  readonly name = 'unified';

  canHandle(): boolean {
    return true;
  }

  async *execute(ctx: ProtocolExecutionContext): AsyncGenerator<ProtocolEvent, void, undefined> {
    const usage = emptyUsage();
    let text = '';
    yield { type: 'phase', status: 'start', phase: 'action_phase', phaseIndex: 1, cycleIndex: 0 };
    const system = ctx.systemContext ? `${UNIFIED_SYSTEM_PROMPT}\n\n${ctx.systemContext}` : UNIFIED_SYSTEM_PROMPT;
    ctx.trace.record({ requestId: ctx.requestId, projectId: ctx.projectId, type: 'llm_request', details: { phaseIndex: 1, messages: ctx.messages.length + 1, tools: 0 } });
    let failure: Extract<ProtocolEvent, { type: 'error' }> | null = null;
    let finishReason = 'stop';
    for await (const ev of ctx.llm.stream(
      { messages: [{ role: 'system', content: system }, ...ctx.messages], temperature: temperatureFor(ctx.mode), maxTokens: MAX_RESPONSE_TOKENS, requestId: ctx.requestId },
      ctx.signal,
    )) {
      if (ev.type === 'text-delta') {
        text += ev.text;
        yield { type: 'chunk', content: ev.text };
      } else if (ev.type === 'finish') {
        addUsage(usage, ev.usage);
        finishReason = ev.reason;
      } else if (ev.type === 'error') {
        if (ev.error.code !== 'aborted') failure = { type: 'error', code: `llm_${ev.error.code}`, message: ev.error.message, retryable: ev.error.retryable };
        ctx.trace.record({ requestId: ctx.requestId, projectId: ctx.projectId, type: 'llm_error', details: { ...ev.error } });
      }
    }
    ctx.trace.record({ requestId: ctx.requestId, projectId: ctx.projectId, type: 'llm_response', details: { phaseIndex: 1, finishReason, chars: text.length } });
    const reason = ctx.signal.aborted ? 'cancelled' : failure ? 'error' : 'final_answer';
    yield { type: 'phase', status: 'end', phase: 'action_phase', phaseIndex: 1, cycleIndex: 0, reason };
    if (failure && !ctx.signal.aborted) yield failure;
    yield { type: 'done', fullContent: text, stopReason: ctx.signal.aborted ? 'cancelled' : failure ? 'error' : 'final_answer', usage };
  }
}
