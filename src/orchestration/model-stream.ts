import type { LlmAdapter, LlmErrorInfo, LlmRequest, LlmStreamEvent, LlmUsage } from '../llm/llm-adapter.port';
import { ToolCallAccumulator, type CompletedToolCall, type InvalidToolCall } from '../llm/tool-call-accumulator';

/** How one streamed model response ended. */
export interface ModelStreamResult {
  text: string;
  reasoningChars: number;
  /** complete calls, index order (only the first when stopping at the first complete call) */
  calls: CompletedToolCall[];
  /** calls whose arguments never became a JSON object, or that had no name */
  invalid: InvalidToolCall[];
  finishReason?: string;
  usage?: LlmUsage;
  /** set when the model or the transport failed (not when we stopped it) */
  error?: LlmErrorInfo;
  /** we aborted the upstream request because the first complete call was known */
  stoppedEarly: boolean;
}

export interface ModelStreamOptions {
  /** two-stage: end the response at the first complete tool call and abort upstream */
  stopAtFirstCompleteCall?: boolean;
  /** forced final answers: tool-call fragments are dropped */
  ignoreToolCalls?: boolean;
  /**
   * streamed before this step's first answer text (only if it has any): the paragraph break
   * that keeps an earlier step's text ("Let me look first.") apart from this one's
   */
  lead?: string;
}

/**
 * One streamed model response. The protocol iterates `events` itself and hands each event to
 * `accept`, which returns the answer text to stream (if any) and accumulates tool calls by
 * structural boundary; `stopped` turns true at the first complete call when asked to stop
 * there (upstream is aborted); `close()` releases the request and tells how it ended.
 *
 * `accept` is synchronous on purpose: each text delta then costs the protocol one await, as in
 * a plain loop over the adapter (bench:protocol measures it). Reasoning text is counted, never
 * treated as answer text.
 */
export class ModelStream {
  readonly events: AsyncIterable<LlmStreamEvent>;
  private readonly result: ModelStreamResult = { text: '', reasoningChars: 0, calls: [], invalid: [], stoppedEarly: false };
  private readonly acc = new ToolCallAccumulator();
  private readonly local = new AbortController();
  private readonly onAbort = () => this.local.abort(this.signal.reason);
  private closed = false;
  private led = false;
  stopped = false;

  constructor(
    llm: LlmAdapter,
    request: LlmRequest,
    private readonly signal: AbortSignal,
    private readonly opts: ModelStreamOptions = {},
  ) {
    // one listener instead of AbortSignal.any(): cheaper per model call, removed on close
    if (signal.aborted) this.local.abort(signal.reason);
    else signal.addEventListener('abort', this.onAbort, { once: true });
    this.events = llm.stream(request, this.local.signal);
  }

  /** Takes one event; returns answer text to stream, if the event carried some. */
  accept(ev: LlmStreamEvent): string | undefined {
    switch (ev.type) {
      case 'text-delta':
        if (!ev.text) return undefined;
        this.result.text += ev.text;
        return ev.text;
      case 'reasoning-delta':
        this.result.reasoningChars += ev.text.length;
        return undefined;
      case 'tool-call-delta':
        if (this.opts.ignoreToolCalls) return undefined;
        if (this.acc.push(ev).length > 0 && this.opts.stopAtFirstCompleteCall) {
          this.stopped = true;
          this.result.stoppedEarly = true;
          this.local.abort(new Error('first complete tool call received'));
        }
        return undefined;
      case 'finish':
        this.result.finishReason = ev.rawReason ?? ev.reason;
        this.result.usage = ev.usage;
        this.acc.finish();
        return undefined;
      case 'error':
        // our own early stop is not an error; the caller's abort is reported as `aborted`
        if (!this.stopped) this.result.error = ev.error;
        return undefined;
    }
  }

  /**
   * The one model step both protocols run (`yield* stream.step()`): streams the response's
   * answer text as `chunk` events, stops at the first complete call when asked, and returns how
   * it ended. An adapter that throws (instead of reporting an `error` event) ends the step with
   * a `provider_error`. A plain iterator rather than a generator: one generator level less per
   * text delta on the hot path (bench:protocol).
   */
  step(): AsyncIterableIterator<ChunkEvent, ModelStreamResult, undefined> {
    return new ModelStep(this, this.events[Symbol.asyncIterator]());
  }

  /** The text to stream for a delta: the lead goes before the step's first text. */
  withLead(text: string): string {
    if (!this.opts.lead || this.led || text === '') return text;
    this.led = true;
    return this.opts.lead + text;
  }

  /** An adapter throw, unless it is the abort of our own early stop or of the caller. */
  fail(err: unknown): void {
    if (this.stopped || this.signal.aborted) return;
    this.result.error = { code: 'provider_error', message: err instanceof Error ? err.message : String(err), retryable: false };
  }

  /** Ends the response (idempotent) and tells how it ended. */
  close(): ModelStreamResult {
    if (!this.closed) {
      this.closed = true;
      this.signal.removeEventListener('abort', this.onAbort);
      // a clean end of stream is a boundary too; a failed stream's open calls are never run
      if (!this.result.error) this.acc.finish();
      const complete = this.acc.completed;
      this.result.calls = this.opts.stopAtFirstCompleteCall ? complete.slice(0, 1) : [...complete];
      this.result.invalid = [...this.acc.invalid];
    }
    return this.result;
  }
}

type ChunkEvent = { type: 'chunk'; content: string };

class ModelStep implements AsyncIterableIterator<ChunkEvent, ModelStreamResult, undefined> {
  constructor(
    private readonly stream: ModelStream,
    private readonly events: AsyncIterator<LlmStreamEvent>,
  ) {}

  [Symbol.asyncIterator](): this {
    return this;
  }

  // .then() rather than an async function: one promise per delta, no extra frame (hot path)
  next(): Promise<IteratorResult<ChunkEvent, ModelStreamResult>> {
    if (this.stream.stopped) return this.return();
    return this.events.next().then(this.onEvent, this.onError);
  }

  private readonly onEvent = (r: IteratorResult<LlmStreamEvent>): IteratorResult<ChunkEvent, ModelStreamResult> | Promise<IteratorResult<ChunkEvent, ModelStreamResult>> => {
    if (r.done) return { done: true, value: this.stream.close() };
    const text = this.stream.accept(r.value);
    return text !== undefined ? { done: false, value: { type: 'chunk', content: this.stream.withLead(text) } } : this.next();
  };

  private readonly onError = (err: unknown): IteratorResult<ChunkEvent, ModelStreamResult> => {
    this.stream.fail(err);
    return { done: true, value: this.stream.close() };
  };

  /** Releases the model request (the consumer stopped early, or the first complete call came). */
  async return(): Promise<IteratorResult<ChunkEvent, ModelStreamResult>> {
    try {
      await this.events.return?.();
    } catch (err) {
      this.stream.fail(err);
    }
    return { done: true, value: this.stream.close() };
  }
}
