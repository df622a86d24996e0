/**
 * A run's stream of events: numbered, batched by load, stored before anyone sees them, then
 * handed to the sinks, with the backpressure that carries a slow database's or client's pace
 * back to the producer (see RunStream). The envelope is run-envelope.ts's; the store it hands
 * batches to is the RunEventStore port.
 */
import type { RunClosing } from './repositories/run-event.repository';
import type { SentEvent } from './run-event-bus.service';
import { ChunkJson, chunkEnvelope, runEnvelope, type EndEvent, type EnvelopedEvent, type EnvelopeState, type RunStreamIdentity, type WireEvent } from './run-envelope';
import type { RunBatch, RunEventStore } from './run-event-store.port';

// the types the executor opens and ends a stream with
export type { EndEvent } from './run-envelope';
export type { RunEventStore } from './run-event-store.port';

/**
 * Numbers a run's events (`seq` = SSE id: 1, 2, 3… with no gaps), wraps them in the SSE
 * envelope, stores them in run_events BEFORE anyone sees them, then hands them to the sinks
 * (the SSE writer, the in-process bus).
 *
 * Events are batched by load, not by clock, and served in the order they arrived: a run's first
 * event since its last batch was taken opens a new batch, handed to the store at once (see
 * RunBatch), and the events that follow join it until the store's next statement takes it. So an
 * idle server stores a chunk at the end of the current turn of the event loop (the store's one
 * hop), and under load a run's chunks wait for the statement in flight only, in the queue's order
 * of their oldest chunk, not behind the run's own previous batch. Any event other than a chunk
 * closes its batch, and so does a batch of CHUNK_BATCH_SIZE chunks (joined ones counted, see
 * `joinChunk`); an event between phases may
 * instead wait for the run's next write (`hold`). Each event keeps its own seq,
 * so a replay gives back exactly what was sent. A batch's events reach the sinks once it is
 * committed, batch after batch in seq order. `emit` resolves when its batch reached the sinks;
 * a chunk's producer waits only once its batch is full, or once the run's text not yet sent
 * (every batch, stored or not) reaches MAX_UNSENT_CHUNKS rows or MAX_UNSENT_CHARS characters.
 * That carries a slow database's or client's backpressure back to the protocol (and the model
 * stream) without holding the model's stream to one chunk per stored batch, and bounds what a
 * client that stops reading costs the server in bytes, however large the model's deltas are.
 */
export class RunStream {
  static readonly CHUNK_BATCH_SIZE = 32;
  /**
   * A run's chunk rows numbered but not yet sent (stored or not) past which its producer waits
   * for its client. Without it, a client that stopped reading held nothing back as long as the
   * store took each batch before it filled: the store keeps up, so the batches waiting for the
   * client grew for the whole answer.
   */
  static readonly MAX_UNSENT_CHUNKS = 4 * RunStream.CHUNK_BATCH_SIZE;
  /**
   * The same in characters of chunk text: one delta read from the model can carry a whole
   * network read (deltas read together are joined), so a count of chunks alone does not bound bytes.
   */
  static readonly MAX_UNSENT_CHARS = 64 * 1024;

  private seq: number;
  /** the seq of the last event handed to the sinks (stored before) */
  private sentSeq: number;
  private state: EnvelopeState;
  /** the batch events join, until it is closed */
  private open: RunBatch | null = null;
  /** chunks (deltas) that went into the open batch, joined or not: CHUNK_BATCH_SIZE closes it */
  private batchChunks = 0;
  /** chunk rows and characters of chunk text numbered, and of those sent: the difference is what waits for the client */
  private chunkRows = 0;
  private chunkChars = 0;
  private sentRows = 0;
  private sentChars = 0;
  /** events held for the run's next write (`hold`), while no batch is open */
  private held: SentEvent[] = [];
  /** a phase ended and the next has not started: see `hold` */
  private between = false;
  /** shared with the store by every batch of this run */
  private readonly run: RunBatch['run'] = { failed: null };
  /** the batches' deliveries, in order; settled once every batch handed over reached the sinks */
  private chain: Promise<void> = Promise.resolve();
  private sinkFailed = false;
  private failure: Error | null = null;
  /** the JSON of this run's chunk envelopes, its ids and current phase serialized once */
  private readonly json: ChunkJson;

  constructor(
    private readonly id: RunStreamIdentity,
    private readonly repo: RunEventStore,
    private readonly sinks: Array<(events: SentEvent[]) => Promise<void> | void>,
    start: { lastSeq: number; state?: EnvelopeState },
  ) {
    this.seq = start.lastSeq;
    this.sentSeq = start.lastSeq;
    this.state = start.state ?? { phase: 'action_phase', phaseIndex: 0, cycleIndex: 0 };
    this.json = new ChunkJson(id);
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
   * turn of the microtask queue, on the event nearly every event of a turn is): the batches
   * handed over up to its own once that one holds CHUNK_BATCH_SIZE chunks (the next chunk opens
   * a new batch), or the failed chain after a sink failed. Below that size the producer goes on
   * while its batch waits and is stored: waiting for each stored batch would let the model's
   * stream advance by one chunk per statement, and under a slow database every stream would fall
   * behind its model.
   */
  chunk(content: string): Promise<void> | null {
    const open = this.open;
    const last = open !== null && !open.closed ? open.rows[open.rows.length - 1] : undefined;
    if (last !== undefined && last.type === 'chunk') {
      // the run's previous chunk still waits for a statement: this one joins it (see `joinChunk`)
      this.joinChunk(last, content);
      this.batchChunks++;
    } else {
      const seq = ++this.seq;
      const data = chunkEnvelope(this.id, seq, this.state, content);
      if (this.add({ seq, type: 'chunk', data, json: this.json.of(seq, content, this.state) }) !== open) this.batchChunks = 0;
      this.batchChunks++;
      this.chunkRows++;
    }
    this.chunkChars += content.length;
    if (
      this.batchChunks >= RunStream.CHUNK_BATCH_SIZE ||
      this.chunkRows - this.sentRows >= RunStream.MAX_UNSENT_CHUNKS ||
      this.chunkChars - this.sentChars >= RunStream.MAX_UNSENT_CHARS
    ) {
      return this.flush();
    }
    return this.sinkFailed ? this.chain : null;
  }

  /**
   * Coalescing under load: a chunk that comes while the run's previous one is still waiting in
   * the open batch (no statement took it yet) is appended to it, so the text that piled up
   * behind a statement in flight costs one row, one seq, one write to the client and one event
   * on the bus, however many deltas it holds. Nothing waits for this to happen: when idle, a
   * batch is taken at the end of the turn of the event loop that opened it, so each delta still
   * goes out on its own. Any other event after a chunk ends the joining (it takes the next seq).
   */
  private joinChunk(row: SentEvent, content: string): void {
    const joined = (row.data.content as string) + content;
    row.data.content = joined;
    row.json = this.json.of(row.seq, joined, this.state);
  }

  /** Adds an event to the open batch, or to a new one handed to the store now (its events are sent once it is stored). */
  private add(event: SentEvent): RunBatch {
    let batch = this.open;
    if (batch === null || batch.closed) {
      // the held events go with this write, before it in seq order
      batch = { requestId: this.id.requestId, rows: this.held, closed: false, run: this.run };
      this.held = [];
      this.open = batch;
      // never rejects: a failure is kept for `deliver`, which meets it in order (an early rejection would go unhandled)
      const stored = this.repo.enqueue(batch).then(noError, asError);
      const rows = batch.rows;
      this.chain = this.chain.then(() => this.deliver(rows, stored));
      // a failed sink is heard by the next producer that waits, not as an unhandled rejection meanwhile
      this.chain.catch(() => undefined);
    }
    batch.rows.push(event);
    return batch;
  }

  /** True after a phase's end edge until the next phase starts (the run's end is near, or the next phase's start). */
  get betweenPhases(): boolean {
    return this.between;
  }

  /**
   * Numbers and queues an event without a write of its own: it goes with the run's next write
   * (the open batch, else the next event's, a chunk batch's, or the closing one), in seq order,
   * and is sent with it. For events between phases (`tool_calls`, the turn's `sources`…), which
   * the next phase's start or the run's end follows at once: storing each alone cost a write per
   * tool call and per turn that nothing waited for. Never for an event after which the run may wait.
   */
  hold(event: Exclude<WireEvent, { type: 'chunk' }>): void {
    const open = this.open;
    if (open !== null && !open.closed) open.rows.push(this.numbered(event));
    else this.held.push(this.numbered(event));
  }

  /**
   * Stores and sends what is queued, unless only held events are (they wait for the run's next
   * write, the closing one included); resolves once the batches handed over are done.
   */
  settle(): Promise<void> {
    const open = this.open;
    return open !== null && !open.closed && open.rows.some((e) => e.type === 'chunk') ? this.flush() : this.chain;
  }

  private enqueue(event: Exclude<WireEvent, { type: 'chunk' }>): void {
    if (event.type === 'phase' && event.status === 'start') {
      this.state = { phase: event.phase, phaseIndex: event.phaseIndex, cycleIndex: event.cycleIndex };
      this.json.phaseChanged();
    }
    this.add(this.numbered(event));
  }

  /** The next seq's event, serialized once: the same text is stored and sent. */
  private numbered(event: Exclude<WireEvent, { type: 'chunk' }>): SentEvent {
    if (event.type === 'phase') this.between = event.status === 'end';
    const data = runEnvelope(this.id, ++this.seq, this.state, event);
    return { seq: this.seq, type: event.type, data, json: JSON.stringify(data) };
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
   * The run's last event (`done`, `paused`): stored in one statement with the run's terminal
   * status (with the chunks of the open batch, taken back from the store's queue if no statement
   * took them yet), once the run's earlier batches are; then sent. Resolves once sent; a failed
   * store leaves `error` set and sends nothing.
   */
  close(event: EndEvent, closing: RunClosing): Promise<void> {
    const open = this.open;
    // the emptied batch is skipped by the store and sends nothing
    const rows = open !== null && !open.closed ? open.rows.splice(0) : [];
    if (open) open.closed = true;
    rows.push(...this.held.splice(0), this.numbered(event));
    this.chain = this.chain.then(() => (this.failure ? undefined : this.deliver(rows, this.repo.insertMany(this.id.requestId, rows, closing).then(noError, asError))));
    this.chain.catch(() => undefined);
    return this.chain;
  }

  /** Closes the open batch (the held events join it); resolves once every event queued is stored and sent. */
  flush(): Promise<void> {
    if (this.held.length > 0) this.add(this.held.pop()!);
    if (this.open) this.open.closed = true;
    return this.chain;
  }

  private async deliver(rows: SentEvent[], stored: Promise<Error | null>): Promise<void> {
    if (this.failure) return;
    const err = await stored;
    if (err) {
      this.failure = err;
      return;
    }
    if (rows.length === 0) return;
    try {
      for (const sink of this.sinks) await sink(rows);
      this.sentSeq = rows[rows.length - 1].seq;
      for (const row of rows) {
        if (row.type !== 'chunk') continue;
        this.sentRows++;
        this.sentChars += (row.data.content as string).length;
      }
    } catch (e) {
      // the chain stays rejected: every later producer that waits on it hears of it, and nothing more is stored
      this.sinkFailed = true;
      this.run.failed ??= e as Error;
      throw e;
    }
  }
}

const noError = (): null => null;
const asError = (err: unknown): Error => (err instanceof Error ? err : new Error(String(err)));
