import { EventSourceParserStream, type EventSourceMessage } from 'eventsource-parser/stream';
import { Backoff, retryAfterMs, sleep, type ReconnectOptions } from './backoff';
import { OrionError, OrionStreamError } from './errors';
import { FINAL_EVENTS, type RunEvent } from './events';

/** What a stream needs of the client: how to call the service. */
export interface StreamTransport {
  /** POST/GET a route of the service with the client's key; `headers` are added to its own */
  request(path: string, init: { method: 'GET' | 'POST'; body?: unknown; headers?: Record<string, string>; signal: AbortSignal }): Promise<Response>;
  runs: { cancel(requestId: string): Promise<unknown>; pause(requestId: string): Promise<unknown> };
}

export type { ReconnectOptions } from './backoff';

export interface StreamOptions {
  /** aborting it closes the connection (without `options.detach`, the service then cancels the run) */
  signal?: AbortSignal;
  reconnect?: ReconnectOptions | false;
}

/**
 * How far a stream reads: `leg` ends at the first `done` or `paused` (a send, a resume, a fork: one
 * leg of a run); `run` reads on past a `paused` that a resume followed, to the run's `done` (the
 * events route), and ends at a `paused` only when nothing came after it.
 */
export type StreamExtent = 'leg' | 'run';

/**
 * A run's events as an async iterable: `for await (const event of stream)`. The request is made
 * when iteration starts (once: a stream is iterated once). When the connection drops before the
 * run's last event (`done`, or `paused`), the stream reconnects to
 * `GET /api/chat/runs/:requestId/events` with `Last-Event-ID` set to the last `seq` received, so
 * the service sends exactly the events after it; events at or below that seq are skipped should
 * any come again. Reconnecting is only useful for a run that outlives its connection: send with
 * `options.detach: true` (without it, the service cancels the run when the connection drops, and
 * the reconnection gets the rest of the cancelled run).
 */
export class RunEventStream implements AsyncIterable<RunEvent> {
  /** the run (from the first event), for cancel, pause and fork */
  requestId: string | undefined;
  /** the seq of the last event given out */
  lastSeq = 0;
  /** how many times the stream reconnected */
  reconnects = 0;
  private started = false;
  /** the `chunk` texts given out, by seq, so that a takeover's supersede can drop those it names */
  private pieces: Array<{ seq: number; text: string }> = [];

  constructor(
    private readonly transport: StreamTransport,
    private readonly open: (signal: AbortSignal) => Promise<Response>,
    private readonly options: StreamOptions = {},
    private readonly extent: StreamExtent = 'leg',
  ) {}

  /**
   * The answer's text so far: the `chunk`s given out, in order, without those a takeover
   * superseded (a `start` with `supersedesFromSeq`: another instance continued the run from a
   * checkpoint after its instance died, and runs the phase cut short again). Once the stream has
   * ended with `done`, it equals `done.fullContent`.
   */
  get text(): string {
    return this.pieces.map((p) => p.text).join('');
  }

  /** Cancels the run (`POST /api/chat/runs/:requestId/cancel`); the stream then ends with `done {stopReason: "cancelled"}`. */
  cancel(): Promise<unknown> {
    return this.transport.runs.cancel(this.started$());
  }

  /** Pauses a two-stage run at its next tool result; the stream then ends with `paused`. */
  pause(): Promise<unknown> {
    return this.transport.runs.pause(this.started$());
  }

  /**
   * The events in order, each once; ends after `done` or `paused` (the events route's stream: after
   * `done`, or a `paused` that no resume followed yet), or when the service has nothing more.
   */
  async *[Symbol.asyncIterator](): AsyncIterator<RunEvent> {
    if (this.started) throw new Error('a RunEventStream is iterated once');
    this.started = true;
    const connection = new AbortController();
    const signal = this.options.signal ? AbortSignal.any([this.options.signal, connection.signal]) : connection.signal;
    const backoff = new Backoff(this.options.reconnect);
    const onRetry = (ms: number) => backoff.serverRetry(ms);
    /** the wait the last refused reconnection asked for (Retry-After) */
    let askedWait = 0;
    try {
      let res: Response | undefined = await this.open(signal);
      if (!res.ok) throw await OrionError.from(res);
      // the events route of a run that ended with nothing after Last-Event-ID
      if (res.status === 204) return;
      let dropped: unknown;
      let pausedLast = false;
      for (;;) {
        if (res) {
          try {
            for await (const message of messages(res, signal, onRetry)) {
              const event = this.accept(message);
              if (!event) continue;
              backoff.reset();
              yield event;
              if (this.extent === 'leg' && FINAL_EVENTS.has(event.type)) return;
              if (event.type === 'done') return;
              pausedLast = event.type === 'paused';
            }
          } catch (err) {
            if (signal.aborted) throw err;
            dropped = err;
          }
        }
        if (pausedLast && !dropped) {
          // the events route ended its body at a paused: ask once for what came after it (a resume's
          // leg); a 204 says nothing did, and the stream ends with the paused
          pausedLast = false;
          ({ res, failure: dropped, waitMs: askedWait = 0 } = await this.reconnect(signal));
          if (res?.status === 204) return;
          continue;
        }
        // the body ended or broke before the run's last event (or the last reconnection failed): pick the run up where it was
        if (!this.requestId) throw new OrionStreamError('the stream ended before its first event (no run to reconnect to)', undefined, 0, dropped);
        const wait = backoff.next(Date.now(), askedWait);
        if (wait === undefined) throw new OrionStreamError(`the stream of run ${this.requestId} broke after seq ${this.lastSeq} and could not be resumed`, this.requestId, this.lastSeq, dropped);
        // not a wait for a condition: spacing the attempts so a restarting service is not hammered
        await sleep(wait, signal);
        this.reconnects++;
        ({ res, failure: dropped, waitMs: askedWait = 0 } = await this.reconnect(signal));
        // the run has ended and nothing came after lastSeq
        if (res?.status === 204) return;
      }
    } finally {
      // the consumer stopped early, or the run's last event came: close the connection
      connection.abort();
    }
  }

  /**
   * One reconnection: the response to read on, or the failure when the attempt failed in a way worth
   * another try (the network, a 5xx, a 429), which then counts against the retries. Any other
   * refusal (404 unknown run, 401, …) will not change on a retry: it ends the stream as an OrionError.
   */
  private async reconnect(signal: AbortSignal): Promise<{ res?: Response; failure?: unknown; waitMs?: number }> {
    let res: Response;
    try {
      res = await this.transport.request(`/api/chat/runs/${encodeURIComponent(this.requestId!)}/events`, {
        method: 'GET',
        headers: { 'last-event-id': String(this.lastSeq) },
        signal,
      });
    } catch (err) {
      if (signal.aborted) throw err;
      return { failure: err };
    }
    if (res.ok) return { res };
    if (res.status >= 500 || res.status === 429) {
      // a draining instance (503 shutting_down) and a rate limit say when to come back
      return { failure: await OrionError.from(res), waitMs: retryAfterMs(res) };
    }
    throw await OrionError.from(res);
  }

  /** The event a message carries, or nothing for a message already given out (or not an event). */
  private accept(message: EventSourceMessage): RunEvent | undefined {
    if (!message.event) return undefined;
    const data = JSON.parse(message.data) as { seq?: number; requestId?: string };
    const seq = typeof data.seq === 'number' ? data.seq : message.id ? Number(message.id) : undefined;
    if (seq !== undefined) {
      if (seq <= this.lastSeq) return undefined;
      this.lastSeq = seq;
    }
    this.requestId ??= data.requestId;
    const event = { type: message.event, ...data } as RunEvent;
    this.followText(event, seq);
    return event;
  }

  private followText(event: RunEvent, seq: number | undefined): void {
    if (event.type === 'chunk') this.pieces.push({ seq: seq ?? Number.MAX_SAFE_INTEGER, text: event.content });
    else if (event.type === 'start' && typeof event.supersedesFromSeq === 'number') {
      const from = event.supersedesFromSeq;
      this.pieces = this.pieces.filter((p) => p.seq < from);
    }
  }

  private started$(): string {
    if (!this.requestId) throw new Error('the run has not started yet: wait for its first event (start)');
    return this.requestId;
  }
}

/** The SSE messages of a response body, as eventsource-parser reads them. */
export async function* messages(res: Response, signal: AbortSignal, onRetry?: (ms: number) => void): AsyncGenerator<EventSourceMessage> {
  if (!res.body) return;
  const reader = res.body.pipeThrough(new TextDecoderStream()).pipeThrough(new EventSourceParserStream({ onRetry })).getReader();
  const release = () => void reader.cancel().catch(() => undefined);
  signal.addEventListener('abort', release, { once: true });
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      yield value;
    }
  } finally {
    signal.removeEventListener('abort', release);
    release();
  }
}
