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
  const stream = (request: LlmRequest, signal?: AbortSignal): AsyncIterable<LlmStreamEvent> => ({
    [Symbol.asyncIterator]: () => new ReportingIterator(adapter, events, request, signal),
  });
  return new Proxy(adapter, {
    get(target, prop) {
      if (prop === 'stream') return stream;
      // the adapter itself as `this`, so its getters and private fields work as without the proxy
      const v = Reflect.get(target, prop, target);
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
}

/**
 * The adapter's stream, each event passed on as it comes, the first text or tool-call delta
 * reported, and the streamed text reported at the end when contents are captured. A plain
 * iterator rather than an async generator around the adapter's: every event of every model
 * call goes through it, and a generator level costs each one its own promises and resumption.
 * Like the generator it replaces, the adapter's stream is asked for at the first `next()`, and
 * the end (`content`) is reported once: when the stream ends, fails, or is closed early.
 */
class ReportingIterator implements AsyncIterator<LlmStreamEvent, undefined> {
  private inner: AsyncIterator<LlmStreamEvent> | undefined;
  private first = true;
  private ended = false;
  private readonly text: string[] | undefined;

  constructor(
    private readonly adapter: LlmAdapter,
    private readonly events: LlmEvents,
    private readonly request: LlmRequest,
    private readonly signal: AbortSignal | undefined,
  ) {
    this.text = events.captureContent ? [] : undefined;
  }

  next(): Promise<IteratorResult<LlmStreamEvent, undefined>> {
    if (this.ended) return Promise.resolve({ done: true, value: undefined });
    try {
      this.inner ??= this.adapter.stream(this.request, this.signal)[Symbol.asyncIterator]();
      return this.inner.next().then(this.onEvent, this.onError);
    } catch (err) {
      return this.onError(err);
    }
  }

  async return(): Promise<IteratorResult<LlmStreamEvent, undefined>> {
    // closed before it started: like a generator never run, nothing began, nothing is reported
    if (!this.inner) this.ended = true;
    if (!this.ended) {
      try {
        await this.inner?.return?.();
      } finally {
        this.end();
      }
    }
    return { done: true, value: undefined };
  }

  private readonly onEvent = (r: IteratorResult<LlmStreamEvent>): IteratorResult<LlmStreamEvent, undefined> => {
    if (r.done) {
      this.end();
      return { done: true, value: undefined };
    }
    const ev = r.value;
    if (this.first && (ev.type === 'text-delta' || ev.type === 'tool-call-delta')) {
      this.first = false;
      this.events.emit({ type: 'first_chunk', provider: this.adapter.provider, model: this.adapter.model, requestId: this.request.requestId, atMs: performance.timeOrigin + performance.now() });
    }
    if (this.text && ev.type === 'text-delta') this.text.push(ev.text);
    return r as IteratorResult<LlmStreamEvent, undefined>;
  };

  private readonly onError = (err: unknown): Promise<never> => {
    this.end();
    return Promise.reject(err);
  };

  private end(): void {
    if (this.ended) return;
    this.ended = true;
    if (this.text) this.events.emit({ type: 'content', provider: this.adapter.provider, model: this.adapter.model, requestId: this.request.requestId, messages: this.request.messages, text: this.text.join('') });
  }
}
