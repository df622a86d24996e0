import type { PhaseName, ProtocolEvent } from '../orchestration/protocol-event';
import type { RunClosing, StoredRunEvent } from './repositories/run-event.repository';
import type { SentEvent } from './run-event-bus.service';

/** Events sent on the wire: the protocol's (minus internal checkpoints) plus `start`. */
export type WireEvent = Exclude<ProtocolEvent, { type: 'checkpoint' }> | { type: 'start'; protocol: string; userMessageId: string | null; model?: string; resumed?: boolean; resumeFromPhaseIndex?: number; takeover?: boolean; parentRequestId?: string };

/** `done` as sent: with the id of the stored answer (null when it could not be stored). */
export type DoneEvent = Extract<WireEvent, { type: 'done' }> & { messageId: string | null };

/** Any event a run sends, as `runEnvelope` wraps it. */
export type EnvelopedEvent = WireEvent | DoneEvent;

/** The event that ends a run's stream (RunStream.close). */
export type EndEvent = Extract<WireEvent, { type: 'done' | 'paused' }>;

/** Where a run's events are stored; `closing` stores the run's end with the batch. */
export interface RunEventStore {
  insertMany(requestId: string, rows: StoredRunEvent[], closing?: RunClosing): Promise<void>;
}

export interface RunStreamIdentity {
  requestId: string;
  projectId: string;
  conversationId: string;
}

export interface EnvelopeState {
  phase: PhaseName;
  phaseIndex: number;
  cycleIndex: number;
}

/**
 * The SSE envelope of one run event (docs/API.md), the only place it is assembled: the run's
 * ids, `seq`, the phase metadata, then the event's own fields, always in this order (replays
 * and the serialized chunk fast path depend on it). `done` is in phase `complete`; a `phase`
 * event carries its own phase and indexes; any other event those of the phase it is in.
 */
export function runEnvelope(id: RunStreamIdentity, seq: number, state: EnvelopeState, event: EnvelopedEvent): Record<string, unknown> {
  if (event.type === 'chunk') {
    // nearly every event of a turn: no rest copy of the event
    return { requestId: id.requestId, projectId: id.projectId, conversationId: id.conversationId, seq, phase: state.phase, phaseIndex: state.phaseIndex, cycleIndex: state.cycleIndex, content: event.content };
  }
  const { type, ...fields } = event;
  return {
    requestId: id.requestId,
    projectId: id.projectId,
    conversationId: id.conversationId,
    seq,
    phase: type === 'done' ? 'complete' : type === 'phase' ? event.phase : state.phase,
    phaseIndex: type === 'phase' ? event.phaseIndex : state.phaseIndex,
    cycleIndex: type === 'phase' ? event.cycleIndex : state.cycleIndex,
    ...fields,
  };
}

/**
 * Numbers a run's events (`seq` = SSE id: 1, 2, 3… with no gaps), wraps them in the SSE
 * envelope, stores them in run_events BEFORE anyone sees them, then hands them to the sinks
 * (the SSE writer, the in-process bus).
 *
 * Chunks are batched by load, not by clock: with no batch in flight, the chunks of the current
 * turn of the event loop go together at its end (setImmediate), so a burst read from one model
 * response is one INSERT and an idle server adds no wait; while a batch is being stored and sent,
 * the chunks that arrive meanwhile form the next batch, which goes as soon as it is done. Any
 * other event flushes at once, and CHUNK_BATCH_SIZE pending chunks flush without waiting for the
 * turn's end; an event between phases may instead wait for the run's next write (`hold`). Each
 * event keeps its own seq, so a replay gives back exactly what was sent. `emit` resolves when its
 * batch reached the sinks;
 * a chunk's producer waits only once CHUNK_BATCH_SIZE chunks are pending behind the batch in
 * flight, which carries a slow database's or client's backpressure back to the protocol (and
 * the model stream) without holding the model's stream to one chunk per stored batch.
 */
export class RunStream {
  static readonly CHUNK_BATCH_SIZE = 32;

  private seq: number;
  /** the seq of the last event handed to the sinks (stored before) */
  private sentSeq: number;
  private state: EnvelopeState;
  private pending: SentEvent[] = [];
  /** a flush at the end of this turn of the event loop, so every chunk of the turn joins it */
  private turnEnd: NodeJS.Immediate | null = null;
  /** chunks arrived while a batch was in flight: flush them once it is done */
  private due = false;
  /** a phase ended and the next has not started: see `hold` */
  private between = false;
  private chain: Promise<void> = Promise.resolve();
  /** batches on `chain` not yet stored and sent; 0 (and no sink failed): `chain` is settled */
  private inFlight = 0;
  private sinkFailed = false;
  private failure: Error | null = null;
  /** `{"requestId":…,"projectId":…,"conversationId":…,"seq":` for chunkJson */
  private idJson: string | undefined;
  /** `,"phase":…,"phaseIndex":…,"cycleIndex":…,"content":` of the current envelope; reset when it changes */
  private envelopeJson: string | undefined;

  constructor(
    private readonly id: RunStreamIdentity,
    private readonly repo: RunEventStore,
    private readonly sinks: Array<(events: SentEvent[]) => Promise<void> | void>,
    start: { lastSeq: number; state?: EnvelopeState },
  ) {
    this.seq = start.lastSeq;
    this.sentSeq = start.lastSeq;
    this.state = start.state ?? { phase: 'action_phase', phaseIndex: 0, cycleIndex: 0 };
  }

  /** The last seq numbered (queued events included). */
  get lastSeq(): number {
    return this.seq;
  }

  /**
   * The last seq stored and sent. After a storage failure the events numbered past it were
   * neither: what the client is told next continues from here, with no gap.
   */
  get lastSentSeq(): number {
    return this.sentSeq;
  }

  get envelope(): EnvelopeState {
    return { ...this.state };
  }

  /** The storage error that stopped this stream, if any. */
  get error(): Error | null {
    return this.failure;
  }

  /**
   * Numbers and queues one event; resolves once it has been stored and sent (a chunk: once the
   * batches before its own have been, see `chunk`).
   */
  emit(event: WireEvent): Promise<void> {
    if (event.type === 'chunk') return this.chunk(event.content) ?? this.chain;
    this.enqueue(event);
    return this.flush();
  }

  /**
   * Numbers and queues one chunk of answer text (already made safe). Returns what the producer
   * must wait for, or null when it need not wait (then awaiting would only cost a promise and a
   * turn of the microtask queue, on the event nearly every event of a turn is): the batches in
   * flight once CHUNK_BATCH_SIZE chunks are pending (the full batch then queues behind them), or
   * the failed chain after a sink failed. Below that size the producer goes on while a batch is
   * stored: waiting for each stored batch would let the model's stream advance by one chunk per
   * statement, and under a slow database every stream would fall behind its model.
   */
  chunk(content: string): Promise<void> | null {
    const seq = ++this.seq;
    const data = runEnvelope(this.id, seq, this.state, { type: 'chunk', content });
    this.pending.push({ seq, type: 'chunk', data, json: this.chunkJson(seq, content) });
    if (this.pending.length >= RunStream.CHUNK_BATCH_SIZE) return this.flush();
    // under load the next write carries them; idle, the end of this turn does
    if (this.inFlight > 0) this.due = true;
    else if (!this.turnEnd) this.turnEnd = setImmediate(this.onTurnEnd);
    return this.sinkFailed ? this.chain : null;
  }

  /** The end of the turn of the event loop a batch's first chunk came in: flush it, or once the batch in flight is done. */
  private readonly onTurnEnd = (): void => {
    this.turnEnd = null;
    if (this.inFlight > 0) this.due = true;
    else this.flushInBackground();
  };

  /** True after a phase's end edge until the next phase starts (the run's end is near, or the next phase's start). */
  get betweenPhases(): boolean {
    return this.between;
  }

  /**
   * Numbers and queues an event without a write of its own: it goes with the run's next write
   * (the next event's, a chunk batch's, or the closing one), in seq order, and is sent with it.
   * For events between phases (`tool_calls`, the turn's `sources`…), which the next phase's
   * start or the run's end follows at once: storing each alone cost a write per tool call and
   * per turn that nothing waited for. Never for an event after which the run may wait.
   */
  hold(event: Exclude<WireEvent, { type: 'chunk' }>): void {
    this.enqueue(event);
  }

  /**
   * Stores and sends what is queued, unless only held events are (they wait for the run's next
   * write, the closing one included); resolves once the batches in flight are done.
   */
  settle(): Promise<void> {
    return this.pending.some((e) => e.type === 'chunk') ? this.flush() : this.chain;
  }

  private enqueue(event: Exclude<WireEvent, { type: 'chunk' }>): void {
    if (event.type === 'phase' && event.status === 'start') {
      this.state = { phase: event.phase, phaseIndex: event.phaseIndex, cycleIndex: event.cycleIndex };
      this.envelopeJson = undefined;
    }
    if (event.type === 'phase') this.between = event.status === 'end';
    const data = runEnvelope(this.id, ++this.seq, this.state, event);
    // serialized once: the same text is stored and sent
    this.pending.push({ seq: this.seq, type: event.type, data, json: JSON.stringify(data) });
  }

  /**
   * Events for this run's client only, once storing failed (`error`): enveloped as the others,
   * numbered on from the last one stored and sent (those queued past it never will be), and
   * neither stored nor sent here.
   */
  unstored(events: Array<Extract<EnvelopedEvent, { type: 'error' | 'done' }>>): SentEvent[] {
    let seq = this.sentSeq;
    return events.map((e) => this.envelopeAt(++seq, e));
  }

  /** One event enveloped at `seq` in the current phase, for a client this stream no longer feeds (neither stored nor sent here). */
  envelopeAt(seq: number, event: EnvelopedEvent): SentEvent {
    return { seq, type: event.type, data: runEnvelope(this.id, seq, this.state, event) };
  }

  /**
   * The JSON of a chunk's envelope, byte for byte what JSON.stringify(data) gives (same keys,
   * same order): the run's ids are serialized once per run, the phase and indexes once per
   * phase, so a chunk costs its seq and its content. Chunks are nearly every event of a turn,
   * and stringifying the whole envelope each time was the run engine's largest cost per event.
   */
  private chunkJson(seq: number, content: string): string {
    this.idJson ??= `${JSON.stringify({ requestId: this.id.requestId, projectId: this.id.projectId, conversationId: this.id.conversationId }).slice(0, -1)},"seq":`;
    if (this.envelopeJson === undefined) {
      const { phase, phaseIndex, cycleIndex } = this.state;
      // the members after `seq`, serialized as JSON.stringify would (a NaN index is null there)
      this.envelopeJson = `${JSON.stringify({ phase, phaseIndex, cycleIndex }).slice(0, -1).replace('{', ',')},"content":`;
    }
    return this.idJson + seq + this.envelopeJson + JSON.stringify(content) + '}';
  }

  /**
   * The run's last event (`done`, `paused`): stored in one statement with the run's terminal
   * status, then sent. Resolves once sent; a failed store leaves `error` set and sends nothing.
   */
  close(event: EndEvent, closing: RunClosing): Promise<void> {
    this.enqueue(event);
    return this.flush(closing);
  }

  /** Stores and sends everything queued. */
  flush(closing?: RunClosing): Promise<void> {
    if (this.turnEnd) {
      clearImmediate(this.turnEnd);
      this.turnEnd = null;
    }
    this.due = false;
    const batch = this.pending;
    this.pending = [];
    if (batch.length === 0) return this.chain;
    this.inFlight++;
    this.chain = this.chain.then(() => this.deliver(batch, closing));
    return this.chain;
  }

  /**
   * A flush nobody awaits (the end of a turn, the batch that waited for the one in flight). Its
   * failure is not lost: the chain stays rejected, and the producer hears of it at its next wait.
   * After a failed sink nothing could be delivered, so nothing is flushed.
   */
  private flushInBackground(): void {
    if (!this.sinkFailed) this.flush().catch(() => undefined);
  }

  private async deliver(batch: SentEvent[], closing: RunClosing | undefined): Promise<void> {
    try {
      if (this.failure) return;
      try {
        await this.repo.insertMany(this.id.requestId, batch, closing);
      } catch (err) {
        this.failure = err as Error;
        return;
      }
      try {
        for (const sink of this.sinks) await sink(batch);
        this.sentSeq = batch[batch.length - 1].seq;
      } catch (err) {
        // the chain stays rejected: every later producer that waits on it hears of it
        this.sinkFailed = true;
        throw err;
      }
    } finally {
      this.inFlight--;
      // the chunks that waited for this batch go now: the chain settles before they are stored
      if (this.inFlight === 0 && this.due) this.flushInBackground();
    }
  }
}
