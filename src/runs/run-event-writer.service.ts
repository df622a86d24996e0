import { Injectable } from '@nestjs/common';
import { type FencedAppend, LeaseLostError, RunEventRepository, type RunClosing, type StoredRunEvent } from './repositories/run-event.repository';

interface Waiting extends FencedAppend {
  resolve(): void;
  reject(err: Error): void;
}

/**
 * Group commit of run events: the events every run of this instance hands over within one
 * turn of the event loop are stored together, in one multi-row INSERT (one transaction), instead
 * of one transaction per run per batch, which queued streams behind commits under load.
 *
 * At most one flush is in flight; what arrives meanwhile waits for it and goes in the next.
 * Each caller's promise settles when its rows are committed (or fenced: LeaseLostError for that
 * run alone); a failed statement fails every append of that flush, as a failed insert did alone.
 * A run's terminal event (`closing`) is stored by its own statement, which also closes the run.
 */
@Injectable()
export class RunEventWriter {
  static readonly MAX_ROWS = 2000;
  private queue: Waiting[] = [];
  private inFlight = false;
  private scheduled = false;

  constructor(private readonly events: RunEventRepository) {}

  append(requestId: string, owner: string, rows: StoredRunEvent[], closing?: RunClosing): Promise<void> {
    if (rows.length === 0) return Promise.resolve();
    if (closing) return this.events.appendFenced(requestId, owner, rows, closing);
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ requestId, owner, rows, resolve, reject });
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.inFlight || this.scheduled) return;
    this.scheduled = true;
    // the rest of this tick's events join the same statement
    setImmediate(() => {
      this.scheduled = false;
      void this.flush();
    });
  }

  private async flush(): Promise<void> {
    if (this.queue.length === 0) return;
    // bounded statements (parameters per row × rows); the rest goes in the next flush
    let rows = 0;
    let take = 0;
    while (take < this.queue.length && (take === 0 || rows + this.queue[take].rows.length <= RunEventWriter.MAX_ROWS)) rows += this.queue[take++].rows.length;
    const batch = this.queue.splice(0, take);
    this.inFlight = true;
    try {
      const stored = await this.events.appendFencedMany(batch);
      const expected = new Map<string, number>();
      for (const w of batch) expected.set(w.requestId, (expected.get(w.requestId) ?? 0) + w.rows.length);
      for (const w of batch) {
        // all of a run's rows, or none: the lease is checked once per run in the statement
        if ((stored.get(w.requestId) ?? 0) === expected.get(w.requestId)) w.resolve();
        else w.reject(new LeaseLostError(w.requestId));
      }
    } catch (err) {
      for (const w of batch) w.reject(err as Error);
    } finally {
      this.inFlight = false;
      if (this.queue.length) this.schedule();
    }
  }
}
