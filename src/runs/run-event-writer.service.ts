import { Injectable, Logger } from '@nestjs/common';
import { TickBatcher } from '../common/util/tick-batcher';
import { type FencedAppend, LeaseLostError, RunEventRepository, type RunClosing, type StoredRunEvent } from './repositories/run-event.repository';

interface Pending extends FencedAppend {
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

  constructor(private readonly events: RunEventRepository) {}

  /** Stores `rows` of a run while `owner` holds its lease; resolves once committed. */
  append(requestId: string, owner: string, rows: StoredRunEvent[], closing?: RunClosing): Promise<void> {
    if (rows.length === 0) return Promise.resolve();
    if (closing) return this.events.appendFenced(requestId, owner, rows, closing);
    return new Promise<void>((resolve, reject) => this.batcher.add({ requestId, owner, rows, resolve, reject }));
  }

  private async write(batch: Pending[]): Promise<void> {
    let inserted: Map<string, number>;
    try {
      inserted = await this.insert(batch);
    } catch (err) {
      if (batch.length === 1) return batch[0].reject(err as Error);
      // one run's bad rows must not fail every run in the statement: each on its own
      this.logger.warn(`a grouped write of ${batch.length} runs failed (${(err as Error).message}); writing them one by one`);
      for (const p of batch) await this.write([p]);
      return;
    }
    for (const p of batch) {
      const got = inserted.get(p.requestId) ?? 0;
      inserted.set(p.requestId, got - p.rows.length);
      if (got >= p.rows.length) p.resolve();
      else p.reject(new LeaseLostError(p.requestId));
    }
  }

  /** One statement for the batch (appendFencedMany); returns the rows stored per run. */
  private async insert(batch: Pending[]): Promise<Map<string, number>> {
    const stored = await this.events.appendFencedMany(batch);
    this.stats.statements++;
    for (const n of stored.values()) this.stats.rows += n;
    return stored;
  }
}

/** How many queued appends, from the first, fit in one statement of at most `maxRows` rows (at least one). */
function fitting(queue: readonly Pending[], maxRows: number): number {
  let rows = 0;
  let n = 0;
  while (n < queue.length && (n === 0 || rows + queue[n].rows.length <= maxRows)) rows += queue[n++].rows.length;
  return n;
}
