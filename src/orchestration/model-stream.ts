import type { LateDeltas, LlmAdapter, LlmRequest, LlmStreamEvent } from '../llm/llm-adapter.port';
import { ToolCallAccumulator } from '../llm/tool-call-accumulator';
import { deadline, type Deadline } from '../common/util/abort.util';
import { DEFAULT_CONTENT_LOOP } from './loops/content-loop';
import { LoopWatch } from './loops/loop-watch';
import { estimateUsage } from '../llm/usage-estimate';
import { ModelStep, type ChunkEvent } from './model-step';
import type { ModelStreamOptions, ModelStreamResult, StreamLoop } from './model-stream-result';

export type { ModelStreamOptions, ModelStreamResult, StreamLoop } from './model-stream-result';

/**
 * One streamed model response. The protocol iterates `events` itself and hands each event to
 * `accept`, which returns the answer text to stream (if any) and accumulates tool calls by
 * structural boundary; `stopped` turns true at the first complete call when asked to stop
 * there (upstream is aborted); `close()` releases the request and tells how it ended.
 *
 * `accept` is synchronous on purpose: each text delta then costs the protocol one await, as in
 * a plain loop over the adapter (bench:protocol measures it). Reasoning text is counted, never
 * treated as answer text. The first `finish` ends the response on every route: a delta after it
 * is dropped and only counted (`ignoredAfterFinish`).
 */
export class ModelStream {
  readonly events: AsyncIterable<LlmStreamEvent>;
  private readonly result: ModelStreamResult = { text: '', reasoningChars: 0, calls: [], invalid: [], stoppedEarly: false };
  private readonly acc = new ToolCallAccumulator();
  /** the caller's signal plus our own early stop at the first complete call */
  private readonly local: Deadline;
  private closed = false;
  private led = false;
  /** a `finish` event came: the response is over, whatever the adapter sends next */
  private finished = false;
  /** two-stage: a tool call is open, so text may be after a call that completes (see opts) */
  private callOpen = false;
  private heldText = '';
  private heldReasoningChars = 0;
  private invalidSeen = 0;
  /** content loops in the answer text and in the reasoning, watched as they stream (null: detection off) */
  private readonly watch: LoopWatch | null;
  stopped = false;

  constructor(
    llm: LlmAdapter,
    private readonly request: LlmRequest,
    private readonly signal: AbortSignal,
    private readonly opts: ModelStreamOptions = {},
  ) {
    // deadline() without a limit: one listener instead of AbortSignal.any(), cheaper per model call, removed on close
    this.local = deadline(signal);
    this.events = llm.stream(request, this.local.signal);
    const loop = opts.contentLoop ?? DEFAULT_CONTENT_LOOP;
    this.watch = loop.repeats > 0 ? new LoopWatch(loop, { shown: opts.loopShown, lag: opts.loopLag }) : null;
  }

  /** Takes one event; returns answer text to stream, if the event carried some. */
  accept(ev: LlmStreamEvent): string | undefined {
    // the first complete call ended the response: deltas already decoded behind it are not part of it
    if (this.stopped) return undefined;
    switch (ev.type) {
      case 'text-delta':
        if (!ev.text) return undefined;
        if (this.finished) return this.late('text');
        if (this.callOpen) {
          this.heldText += ev.text;
          return undefined;
        }
        return this.answer(ev.text);
      case 'reasoning-delta':
        if (this.finished) return this.late('reasoning');
        if (this.callOpen) this.heldReasoningChars += ev.text.length;
        else this.result.reasoningChars += ev.text.length;
        this.watchReasoning(ev.text);
        return undefined;
      case 'tool-call-delta':
        if (this.finished) return this.late('toolCalls');
        if (this.opts.ignoreToolCalls) return undefined;
        return this.boundary(this.acc.push(ev));
      case 'finish':
        if (this.finished) return undefined;
        this.finished = true;
        this.result.finishReason = ev.rawReason ?? ev.reason;
        this.result.usage = ev.usage;
        if (ev.ignoredAfterFinish) this.addLate(ev.ignoredAfterFinish);
        // the response is over: a repetition that did not become a loop streams whole
        return joined(this.boundary(this.acc.finish()), this.releaseRepeats());
      case 'error':
        // our own early stop is not an error; the caller's abort is reported as `aborted`
        this.result.error = ev.error;
        // no call completed: what was held behind an open one is answer text (unless cancelled)
        if (this.signal.aborted) return undefined;
        return joined(this.release(), this.releaseRepeats());
    }
  }

  /**
   * After the accumulator took a fragment or the finish (two-stage only): the first complete
   * call stops the response and drops what was held behind it; a call that closed unusable
   * releases it; while a call stays open, text keeps being held.
   */
  private boundary(completed: readonly unknown[]): string | undefined {
    if (!this.opts.stopAtFirstCompleteCall) return undefined;
    if (completed.length > 0) {
      this.heldText = '';
      this.heldReasoningChars = 0;
      this.callOpen = false;
      // at the finish the response is over anyway; before it, upstream is still sending
      if (!this.finished) {
        this.stopped = true;
        this.result.stoppedEarly = true;
        this.local.abort(new Error('first complete tool call received'));
      }
      // repeats held back came before the call: answer text
      return this.releaseRepeats();
    }
    const closedUnusable = this.acc.invalidCount > this.invalidSeen;
    this.invalidSeen = this.acc.invalidCount;
    this.callOpen = this.acc.pendingCount > 0;
    return closedUnusable || !this.callOpen ? this.release() : undefined;
  }

  /** Held text and reasoning join the response: the call they followed did not complete. */
  private release(): string | undefined {
    this.result.reasoningChars += this.heldReasoningChars;
    this.heldReasoningChars = 0;
    const text = this.heldText;
    this.heldText = '';
    if (text === '') return undefined;
    return this.answer(text);
  }

  /** Text that joins the answer and streams, as far as the content-loop watch lets it (it may hold some back, or find a loop). */
  private answer(text: string): string | undefined {
    const w = this.watch;
    if (!w) {
      this.result.text += text;
      return text;
    }
    return this.handedOut(w.answer(text));
  }

  /** What the watch handed out joins the answer; a loop it found stops the response. */
  private handedOut(out: string): string | undefined {
    if (out) this.result.text += out;
    if (this.watch?.loop && !this.stopped) this.stopAtLoop(this.watch.loop);
    return out || undefined;
  }

  /** The response ended (or a call did) while a passage was repeating short of a loop: all of it streams. */
  private releaseRepeats(): string | undefined {
    return this.watch ? this.handedOut(this.watch.releaseAll()) : undefined;
  }

  private watchReasoning(text: string): void {
    if (!this.watch || this.stopped) return;
    this.watch.reasoning(text);
    if (this.watch.loop) this.stopAtLoop(this.watch.loop);
  }

  private stopAtLoop(loop: StreamLoop): void {
    this.result.loop = loop;
    this.stopped = true;
    this.heldText = '';
    this.local.abort(new Error('content loop detected'));
  }

  private late(kind: keyof LateDeltas): undefined {
    this.addLate({ text: 0, reasoning: 0, toolCalls: 0, [kind]: 1 });
    return undefined;
  }

  private addLate(d: LateDeltas): void {
    const sum = (this.result.ignoredAfterFinish ??= { text: 0, reasoning: 0, toolCalls: 0 });
    sum.text += d.text;
    sum.reasoning += d.reasoning;
    sum.toolCalls += d.toolCalls;
  }

  /**
   * The adapter's stream ended. One that ended without `finish` or `error` still reached a
   * boundary: returns the text held behind a call that did not complete.
   */
  end(): string | undefined {
    if (this.finished || this.result.error || this.stopped) return undefined;
    this.finished = true;
    return joined(this.boundary(this.acc.finish()), this.releaseRepeats());
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
      this.local.dispose();
      // the detectors' memory goes back to their pool for the next response
      this.watch?.dispose();
      // a clean end of stream is a boundary too; a failed stream's open calls are never run
      if (!this.result.error) this.acc.finish();
      const complete = this.acc.completed;
      // a response stopped at a content loop is not acted on: its calls are dropped with it
      if (!this.result.loop) {
        this.result.calls = this.opts.stopAtFirstCompleteCall ? complete.slice(0, 1) : [...complete];
        this.result.invalid = [...this.acc.invalid];
      }
      // no usage reported (or the stream was cut before it came, also by a cancel: the provider
      // still bills what it generated): the turn's budget and cost still count this call, estimated
      const cancelled = this.signal.aborted;
      if (!this.result.usage && (!this.result.error || cancelled)) {
        const said = cancelled ? this.result.text + this.heldText : this.result.text;
        this.result.usage = estimateUsage(this.request, said, complete.map((c) => c.name + c.arguments));
      }
    }
    return this.result;
  }
}

function joined(a: string | undefined, b: string | undefined): string | undefined {
  return a === undefined ? b : b === undefined ? a : a + b;
}
