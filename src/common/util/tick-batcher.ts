/**
 * Group commit for work handed over from many places at once: the first item schedules a flush
 * on the event loop's next turn, so everything handed over in this turn goes together; while a
 * flush runs, new items wait and go together in the next one. At most one flush is in flight.
 * `take` says how many of the queued items the next flush carries (a statement's size bound).
 * `flush` settles its own items and does not throw.
 */
export class TickBatcher<T> {
  private queue: T[] = [];
  private active = false;

  constructor(
    private readonly flush: (batch: T[]) => Promise<void>,
    private readonly take: (queue: readonly T[]) => number = (q) => q.length,
  ) {}

  add(item: T): void {
    this.queue.push(item);
    if (this.active) return;
    this.active = true;
    setImmediate(() => void this.drain());
  }

  private async drain(): Promise<void> {
    try {
      while (this.queue.length > 0) await this.flush(this.queue.splice(0, Math.max(1, this.take(this.queue))));
    } finally {
      this.active = false;
    }
  }
}
