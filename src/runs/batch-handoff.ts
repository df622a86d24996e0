/**
 * Hands a run's batches of events, one at a time, to the generator its client's stream reads.
 * `put` resolves once the generator has passed the whole batch on and asks for the next (the
 * run then waits for the client's socket, ClientFlow); `take` resolves with the next batch, or
 * null once closed (the run ended, or its client left). Closing also frees a pending `put`, so
 * a run whose client left is never held by it.
 */
export class BatchHandoff<T> {
  private next: T[] | null = null;
  private passedOn: (() => void) | null = null;
  private waiting: ((batch: T[] | null) => void) | null = null;
  private closed = false;

  put(batch: T[]): Promise<void> {
    if (this.closed) return Promise.resolve();
    return new Promise<void>((resolve) => {
      this.passedOn = resolve;
      const waiting = this.waiting;
      this.waiting = null;
      if (waiting) waiting(batch);
      else this.next = batch;
    });
  }

  /** The previous batch was passed on: its `put` resolves. Then the next batch, once there is one. */
  take(): Promise<T[] | null> {
    this.release();
    const batch = this.next;
    this.next = null;
    if (batch || this.closed) return Promise.resolve(batch);
    return new Promise((resolve) => (this.waiting = resolve));
  }

  close(): void {
    this.closed = true;
    this.release();
    this.waiting?.(null);
    this.waiting = null;
  }

  private release(): void {
    const passedOn = this.passedOn;
    this.passedOn = null;
    passedOn?.();
  }
}
