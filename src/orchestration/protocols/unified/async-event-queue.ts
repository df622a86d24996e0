/**
 * A small unbounded async queue: producers `push` from callbacks (concurrent tools reporting
 * progress), one consumer drains it with `for await` until `close()`. It is how events from
 * tools running in parallel reach the protocol generator as they happen, in the order they
 * were pushed. Unbounded on purpose: producers are our own tool runs, a handful per step, and
 * each pushes a few events.
 */
export class AsyncEventQueue<T> implements AsyncIterable<T> {
  private readonly items: T[] = [];
  /** called once the consumer is back for the item after theirs: it has handled them (pushHandled) */
  private readonly handled = new Map<T, () => void>();
  private waiter: (() => void) | undefined;
  private closed = false;

  push(item: T): void {
    if (this.closed) return;
    this.items.push(item);
    this.wake();
  }

  /**
   * Pushes `item` and resolves once the consumer has handled it (it asked for the next one): for
   * an event that must be stored before the producer acts on it. Never resolves when the
   * consumer stops first (the turn ends anyway).
   */
  pushHandled(item: T): Promise<void> {
    if (this.closed) return Promise.resolve();
    return new Promise<void>((resolve) => {
      this.handled.set(item, resolve);
      this.push(item);
    });
  }

  /** No more items; the consumer finishes once it has taken the queued ones. Idempotent. */
  close(): void {
    this.closed = true;
    this.wake();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<T> {
    while (true) {
      if (this.items.length > 0) {
        const item = this.items.shift()!;
        yield item;
        this.handled.get(item)?.();
        this.handled.delete(item);
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
