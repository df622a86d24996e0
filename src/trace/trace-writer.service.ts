import { BeforeApplicationShutdown, Injectable, Logger, OnApplicationShutdown, Optional } from '@nestjs/common';
import { AppConfigService } from '../config/app-config.service';
import { SecretRegistry } from '../common/secrets/secret-registry';
import { redactSecrets } from '../common/util/redact.util';
import { TraceEventRepository } from './repositories/trace-event.repository';
import type { TraceRecord, TraceSink } from './trace-sink.port';
import { WriteOrder } from './write-order';

/** Sees every record as it is made (already redacted), with the time it was made (epoch ms). */
export type TraceObserver = (record: TraceRecord, atMs: number) => void;

/**
 * Queued records of some runs, taken by the writer of those runs' events to be stored in the
 * same statement as the events (takeFor). Exactly one of stored() / putBack() is called.
 */
export interface TraceCarry {
  /** in the order they were recorded */
  readonly records: readonly TraceRecord[];
  /** the statement may start once this resolves: earlier writes of the same runs' records are done (ids keep the order records were made in) */
  readonly ready: Promise<void>;
  /** the statement that carried the records committed */
  stored(): void;
  /**
   * it failed: the records go back to the front of the queue, for the next carrier or the
   * writer's own flush (which counts them dropped if it cannot store them). `retire`: the same
   * rows were then stored without them, so the records themselves may be what failed; no
   * statement carries them again (each carrier would fail once more), only the own flush does.
   */
  putBack(opts?: { retire?: boolean }): void;
}

/**
 * Batched asynchronous trace writer. `record()` never blocks a turn: events queue in memory
 * and are inserted in batches of BATCH_SIZE or every FLUSH_INTERVAL_MS, whichever comes first.
 * The queue is bounded (MAX_QUEUE); past it new events are dropped, so a slow database cannot
 * grow memory without bound — never silently: every event not stored (queue full, or a write
 * that failed) is counted, logged, reported by GET /api/health (`trace`) and in the metric
 * orion_trace_dropped_events_total. A turn awaits flush() before its terminal event, so turns
 * are held back while the writer is behind (backpressure) and the trace of a turn is stored
 * when its `done` is sent. Everything queued is flushed on shutdown.
 *
 * A run's records do not wait for the timer while the run writes events: the run-event writer
 * takes them (takeFor) into the statement that stores the events, so a record made before an
 * event was handed to storage is committed no later than that event (a killed instance leaves
 * no stored event without its trace). Records of runs that do not write, or of no run, go by
 * the writer's own flush as before.
 */
@Injectable()
export class TraceWriterService implements TraceSink, BeforeApplicationShutdown, OnApplicationShutdown {
  /** rows per INSERT (one jsonb parameter); a failed batch is retried row by row, so it stays small */
  static readonly BATCH_SIZE = 200;
  /** short enough that GET /api/trace shows a turn moments after it ends */
  static readonly FLUSH_INTERVAL_MS = 100;
  /** about 50 MB at 5 KB per event */
  static readonly MAX_QUEUE = 10_000;

  private readonly logger = new Logger('Trace');
  private queue: TraceRecord[] = [];
  private timer: NodeJS.Timeout | null = null;
  private writing: Promise<void> = Promise.resolve();
  private dropped = 0;
  private readonly secrets: SecretRegistry;
  private readonly observers = new Set<TraceObserver>();
  /** the order of writes holding the same run's records (own flushes and carried statements) */
  private readonly order = new WriteOrder();
  /** carried statements not done yet: flush() waits for them too */
  private readonly carried = new Set<Promise<void>>();
  /** put back by a carrier whose rows were then stored without them: left to the own flush */
  private readonly retired = new WeakSet<TraceRecord>();

  constructor(
    private readonly repo: TraceEventRepository,
    config: AppConfigService,
    @Optional() secrets?: SecretRegistry,
  ) {
    this.secrets = secrets ?? SecretRegistry.fromConfig(config);
  }

  record(event: TraceRecord): void {
    const redacted = { ...event, details: redactSecrets(event.details ?? {}, this.secrets.values()) };
    if (this.observers.size > 0) this.notify(redacted);
    if (this.queue.length >= TraceWriterService.MAX_QUEUE) {
      this.dropped++;
      if (this.dropped === 1 || this.dropped % 1000 === 0) this.logger.warn(`trace queue full: ${this.dropped} events dropped`);
      return;
    }
    this.queue.push(redacted);
    if (this.queue.length >= TraceWriterService.BATCH_SIZE) void this.flush();
    else if (!this.timer) this.timer = setTimeout(() => void this.flush(), TraceWriterService.FLUSH_INTERVAL_MS);
  }

  /**
   * Metrics and OpenTelemetry spans are derived from the records as they are made, so the
   * code that runs a turn needs no second set of hooks. Returns the unsubscribe function.
   */
  observe(observer: TraceObserver): () => void {
    this.observers.add(observer);
    return () => this.observers.delete(observer);
  }

  /**
   * Takes the queued records of these runs (in the order they were recorded) for a statement
   * of the caller's, which stores them with its own rows. Its `ready` also waits for a write of
   * the writer's own already holding records of these runs, so the caller's rows are never
   * committed before them. Null when there is nothing to take or to wait for.
   */
  takeFor(requestIds: Iterable<string>): TraceCarry | null {
    const ids = requestIds instanceof Set ? (requestIds as Set<string>) : new Set(requestIds);
    const carries = (r: TraceRecord) => r.requestId !== undefined && r.requestId !== null && ids.has(r.requestId) && !this.retired.has(r);
    if (ids.size === 0 || (!this.order.busy(ids) && !this.queue.some(carries))) return null;
    const taken: TraceRecord[] = [];
    const rest: TraceRecord[] = [];
    for (const r of this.queue) (carries(r) ? taken : rest).push(r);
    this.queue = rest;
    const { ready, done } = this.order.register(ids);
    let settled = false;
    let finish!: () => void;
    const carried = new Promise<void>((resolve) => (finish = resolve));
    this.carried.add(carried);
    const settle = (back: boolean, retire = false) => {
      if (settled) return;
      settled = true;
      if (back) {
        if (retire) for (const r of taken) this.retired.add(r);
        this.queue.unshift(...taken);
        if (!this.timer) this.timer = setTimeout(() => void this.flush(), TraceWriterService.FLUSH_INTERVAL_MS);
      }
      done();
      this.carried.delete(carried);
      finish();
    };
    return { records: taken, ready, stored: () => settle(false), putBack: (opts) => settle(true, opts?.retire) };
  }

  /** events waiting to be stored */
  get queued(): number {
    return this.queue.length;
  }

  /** How the writer keeps up: `behind` past half the queue, `dropping` once an event was lost. */
  get health(): { status: 'ok' | 'behind' | 'dropping'; queued: number; dropped: number } {
    const status = this.dropped > 0 ? 'dropping' : this.queue.length > TraceWriterService.MAX_QUEUE / 2 ? 'behind' : 'ok';
    return { status, queued: this.queue.length, dropped: this.dropped };
  }

  /** events not stored (queue full, or their write failed), since start */
  get droppedEvents(): number {
    return this.dropped;
  }

  private notify(record: TraceRecord): void {
    const at = performance.timeOrigin + performance.now();
    for (const o of this.observers) {
      try {
        o(record, at);
      } catch (err) {
        // an observer must never break the turn that records
        this.logger.warn(`trace observer failed on ${record.type}: ${(err as Error).message}`);
      }
    }
  }

  /** Resolves when everything recorded so far is stored (or counted dropped), carried records included. */
  async flush(): Promise<void> {
    const carried = [...this.carried];
    await this.flushQueue();
    if (carried.length === 0) return;
    // a carried statement that failed put its records back: they are stored here
    await Promise.all(carried);
    if (this.queue.length > 0) await this.flushQueue();
  }

  private flushQueue(): Promise<void> {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    // chain so batches are written in order and flush() waits for earlier writes
    this.writing = this.writing.then(async () => {
      while (this.queue.length > 0) {
        const batch = this.queue.splice(0, TraceWriterService.BATCH_SIZE);
        const runs = new Set<string>();
        for (const r of batch) if (r.requestId) runs.add(r.requestId);
        const { ready, done } = this.order.register(runs);
        await ready;
        try {
          await this.repo.insertMany(batch);
        } catch (err) {
          // one bad row must not take the batch with it: retry one by one
          let lost = 0;
          for (const row of batch) await this.repo.insertMany([row]).catch(() => lost++);
          if (lost) {
            this.dropped += lost;
            this.logger.error(`could not store ${lost} of ${batch.length} trace events (${this.dropped} lost since start): ${(err as Error).message}`);
          }
        } finally {
          done();
        }
      }
    });
    return this.writing;
  }

  /** Flushed before the database closes (onApplicationShutdown is too late for that). */
  async beforeApplicationShutdown(): Promise<void> {
    await this.flush();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.flush();
  }
}
