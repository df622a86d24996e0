import { Injectable, Logger, Optional } from '@nestjs/common';
import { TickBatcher } from '../common/util/tick-batcher';
import type { TraceRecord } from '../trace/trace-sink.port';
import { TraceWriterService } from '../trace/trace-writer.service';
import { LeaseLostError, RunEventRepository, type RunClosing, type StoredRunEvent } from './repositories/run-event.repository';
import type { RunBatch } from './run-event-store.port';

interface Pending {
  batch: RunBatch;
  owner: string;
  resolve: () => void;
  reject: (err: Error) => void;
}

/**
 * Group commit of run events. Every event is still stored before it is sent, but the events of
 * every run on this instance that arrive while a write is in flight are stored together by the
 * next one: one multi-row INSERT, one commit, whatever the number of streaming runs. With one
 * run it behaves like a write per batch; under load a commit carries many runs' events, so the
 * commits per turn fall as the load grows instead of queueing behind each other.
 *
 * The lease fence is kept per run: a run's rows are inserted only while this instance holds its
 * lease (row locked FOR NO KEY UPDATE), and a run whose rows were not all inserted gets LeaseLostError.
 * A statement that fails is retried run by run, so one bad run cannot fail the others. A run's
 * closing write (its terminal event with its status) goes alone through appendFenced.
 *
 * Each statement also carries the trace records of its runs queued so far (TraceWriterService
 * takeFor), stored whatever the fence does to the events: a record made before an event was
 * handed over is committed no later than the event, so a killed instance leaves no stored event
 * without its trace. A statement that fails while carrying records is retried once, whole,
 * without them: if that stores the events, the records (perhaps what failed) go back to the
 * trace queue for the trace writer's own flush only, so a trace table that cannot be written
 * costs each statement one retry; if the events fail too, the records go back and the run-by-run
 * retries carry them again. A trace row can never fail a run's events.
 */
@Injectable()
export class RunEventWriter {
  /**
   * Events per grouped statement, at most (fewer when several are packed into one row). The rows
   * travel as one jsonb value (jsonRows): about 1 MB for 2,000 chunks; large tool results make it
   * larger, and a statement that fails is retried run by run.
   */
  static readonly MAX_ROWS = 2000;
  private readonly logger = new Logger('RunEventWriter');
  /** statements written and events they carried, since start (for the load benchmark and tests) */
  readonly stats = { statements: 0, rows: 0 };
  private readonly batcher = new TickBatcher<Pending>((batch) => this.write(batch), (queue) => fitting(queue, RunEventWriter.MAX_ROWS));

  constructor(
    private readonly events: RunEventRepository,
    @Optional() private readonly trace?: TraceWriterService,
  ) {}

  /** Stores `rows` of a run while `owner` holds its lease; resolves once committed. */
  append(requestId: string, owner: string, rows: StoredRunEvent[], closing?: RunClosing): Promise<void> {
    if (rows.length === 0) return Promise.resolve();
    if (closing) return this.close(requestId, owner, rows, closing);
    return this.enqueue({ requestId, rows, closed: true, run: { failed: null } }, owner);
  }

  /** Queues a run's batch (the run may add to it until a statement takes it) to be stored while `owner` holds its lease; resolves once committed. */
  enqueue(batch: RunBatch, owner: string): Promise<void> {
    return new Promise<void>((resolve, reject) => this.batcher.add({ batch, owner, resolve, reject }));
  }

  private async close(requestId: string, owner: string, rows: StoredRunEvent[], closing: RunClosing): Promise<void> {
    // fenced: the statement committed, the trace records with it
    await this.carrying([requestId], (...trace) => this.events.appendFenced(requestId, owner, rows, closing, ...trace), (err) => err instanceof LeaseLostError);
  }

  private async write(taken: Pending[]): Promise<void> {
    const batch: Pending[] = [];
    for (const p of taken) {
      // what the run adds from now on goes in its next batch, behind the events queued meanwhile
      p.batch.closed = true;
      if (p.batch.run.failed) p.reject(p.batch.run.failed);
      else if (p.batch.rows.length === 0) p.resolve(); // taken back by the run's closing write
      else batch.push(p);
    }
    if (batch.length === 0) return;
    let inserted: Map<string, number>;
    try {
      inserted = await this.carrying(batch.map((p) => p.batch.requestId), (...trace) => this.insert(batch, ...trace));
    } catch (err) {
      return this.split(batch, err as Error);
    }
    this.settle(batch, inserted);
  }

  /**
   * Runs a statement of these runs carrying their queued trace records (TraceWriterService
   * takeFor), once earlier writes of those records are done. If it fails while carrying records,
   * they may be what failed: the same statement once more without them (a trace table that
   * cannot be written costs each statement one retry, not one per run); if that stores the rows,
   * the records go back for the trace writer's own flush only, which counts them dropped if they
   * cannot be stored; if it fails too, they go back, in front of later ones, for the next carrier
   * (the run-by-run retries). `committed`: an error after which the statement still committed.
   */
  private async carrying<T>(requestIds: string[], statement: (...trace: [] | [readonly TraceRecord[]]) => Promise<T>, committed: (err: unknown) => boolean = () => false): Promise<T> {
    const carry = this.trace?.takeFor(new Set(requestIds)) ?? null;
    if (!carry) return statement();
    await carry.ready;
    try {
      const result = await statement(carry.records);
      carry.stored();
      return result;
    } catch (err) {
      if (committed(err)) {
        carry.stored();
        throw err;
      }
      if (carry.records.length === 0) {
        carry.putBack();
        throw err;
      }
      let result: T;
      try {
        result = await statement();
      } catch (again) {
        carry.putBack();
        throw again;
      }
      carry.putBack({ retire: true });
      return result;
    }
  }

  /** A statement of these runs failed: a single run fails; several are retried one by one, so one run's bad rows cannot fail the others. */
  private async split(batch: Pending[], err: Error): Promise<void> {
    if (batch.length === 1) return fail(batch[0], err);
    this.logger.warn(`a grouped write of ${batch.length} runs failed (${err.message}); writing them one by one`);
    for (const p of batch) await this.write([p]);
  }

  private settle(batch: Pending[], inserted: Map<string, number>): void {
    for (const p of batch) {
      const { requestId, rows } = p.batch;
      const got = inserted.get(requestId) ?? 0;
      inserted.set(requestId, got - rows.length);
      if (got >= rows.length) p.resolve();
      else fail(p, new LeaseLostError(requestId));
    }
  }

  /** One statement for the batch (appendFencedMany); returns the rows stored per run. */
  private async insert(batch: Pending[], trace?: readonly TraceRecord[]): Promise<Map<string, number>> {
    const stored = await this.events.appendFencedMany(batch.map((p) => ({ requestId: p.batch.requestId, owner: p.owner, rows: p.batch.rows })), trace);
    this.stats.statements++;
    for (const n of stored.values()) this.stats.rows += n;
    return stored;
  }
}

/** The run stores nothing more: its later batches are rejected unstored. */
function fail(p: Pending, err: Error): void {
  p.batch.run.failed ??= err;
  p.reject(err);
}

/** How many queued appends, from the first, fit in one statement of at most `maxRows` rows (at least one). */
function fitting(queue: readonly Pending[], maxRows: number): number {
  let rows = 0;
  let n = 0;
  while (n < queue.length && (n === 0 || rows + queue[n].batch.rows.length <= maxRows)) rows += queue[n++].batch.rows.length;
  return n;
}
