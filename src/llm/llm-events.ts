import { Injectable } from '@nestjs/common';
import type { LlmAdapter, LlmErrorCode, LlmRequest, LlmStreamEvent } from './llm-adapter.port';

/** What the trace does not see of a model call: retries before the first byte, the first chunk. */
export type LlmEvent =
  | { type: 'retry'; provider: string; model: string; code: LlmErrorCode }
  | { type: 'first_chunk'; provider: string; model: string; requestId?: string; atMs: number }
  /** only while `captureContent` is on (OTEL_CAPTURE_CONTENT): what was sent and streamed back */
  | { type: 'content'; provider: string; model: string; requestId?: string; messages: LlmRequest['messages']; text: string };

/** Listeners for {@link LlmEvent}s of this app's adapters (metrics subscribe here). */
@Injectable()
export class LlmEvents {
  private readonly listeners = new Set<(e: LlmEvent) => void>();
  /** set by whoever exports contents; otherwise no completion text is kept */
  captureContent = false;

  on(listener: (e: LlmEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  emit(event: LlmEvent): void {
    for (const l of this.listeners) {
      try {
        l(event);
      } catch {
        // a listener (metrics) must never break a model call
      }
    }
  }
}

/**
 * The adapter with its stream's first chunk reported. A Proxy, so the adapter keeps its class
 * (callers and tests check it) and every other member is the adapter's own.
 */
export function reportFirstChunk(adapter: LlmAdapter, events: LlmEvents): LlmAdapter {
  async function* stream(request: LlmRequest, signal?: AbortSignal): AsyncIterable<LlmStreamEvent> {
    let first = true;
    const text: string[] | undefined = events.captureContent ? [] : undefined;
    try {
      for await (const ev of adapter.stream(request, signal)) {
        if (first && (ev.type === 'text-delta' || ev.type === 'tool-call-delta')) {
          first = false;
          events.emit({ type: 'first_chunk', provider: adapter.provider, model: adapter.model, requestId: request.requestId, atMs: performance.timeOrigin + performance.now() });
        }
        if (text && ev.type === 'text-delta') text.push(ev.text);
        yield ev;
      }
    } finally {
      if (text) events.emit({ type: 'content', provider: adapter.provider, model: adapter.model, requestId: request.requestId, messages: request.messages, text: text.join('') });
    }
  }
  return new Proxy(adapter, {
    get(target, prop) {
      if (prop === 'stream') return stream;
      // the adapter itself as `this`, so its getters and private fields work as without the proxy
      const v = Reflect.get(target, prop, target);
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
}
