import { BeforeApplicationShutdown, Injectable, Logger, OnApplicationShutdown, Optional } from '@nestjs/common';
import { AppConfigService } from '../config/app-config.service';
import { SecretRegistry } from '../common/secrets/secret-registry';
import { redactSecrets } from '../common/util/redact.util';
import { TraceEventRepository } from './repositories/trace-event.repository';
import type { TraceRecord, TraceSink } from './trace-sink.port';

/** Sees every record as it is made (already redacted), with the time it was made (epoch ms). */
export type TraceObserver = (record: TraceRecord, atMs: number) => void;

/**
 * Batched asynchronous trace writer. `record()` never blocks a turn: events queue in memory
 * and are inserted in batches of BATCH_SIZE or every FLUSH_INTERVAL_MS, whichever comes first.
 * The queue is bounded (MAX_QUEUE); past it new events are dropped, so a slow database cannot
 * grow memory without bound — never silently: every event not stored (queue full, or a write
 * that failed) is counted, logged, reported by GET /api/health (`trace`) and in the metric
 * orion_trace_dropped_events_total. A turn awaits flush() before its terminal event, so turns
 * are held back while the writer is behind (backpressure) and the trace of a turn is stored
 * when its `done` is sent. Everything queued is flushed on shutdown.
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

  flush(): Promise<void> {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    // chain so batches are written in order and flush() waits for earlier writes
    this.writing = this.writing.then(async () => {
      while (this.queue.length > 0) {
        const batch = this.queue.splice(0, TraceWriterService.BATCH_SIZE);
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
