/**
 * A small unbounded async queue: producers `push` from callbacks (concurrent tools reporting
 * progress), one consumer drains it with `for await` until `close()`. It is how events from
 * tools running in parallel reach the protocol generator as they happen, in the order they
 * were pushed. Unbounded on purpose: producers are our own tool runs, a handful per step, and
 * each pushes a few events.
 */
export class AsyncEventQueue<T> implements AsyncIterable<T> {
  private readonly items: T[] = [];
  private waiter: (() => void) | undefined;
  private closed = false;

  push(item: T): void {
    if (this.closed) return;
    this.items.push(item);
    this.wake();
  }

  /** No more items; the consumer finishes once it has taken the queued ones. Idempotent. */
  close(): void {
    this.closed = true;
    this.wake();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<T> {
    while (true) {
      if (this.items.length > 0) {
        yield this.items.shift()!;
        continue;
      }
      if (this.closed) return;
      await new Promise<void>((resolve) => (this.waiter = resolve));
    }
  }

  private wake(): void {
    const w = this.waiter;
    this.waiter = undefined;
    w?.();
  }
}
