import { Observable, type Subscriber } from 'rxjs';

export interface FromGeneratorOptions {
  /** aborted at once when the subscriber leaves before the generator ended (the route's own signal) */
  abort?: AbortController;
}

/** How the values of a generator, and the value it returns, become the Observable's values. */
export interface GeneratorMapping<T, R, U> {
  each: (value: T) => U;
  /** the returned value as the last value (a route's `result` event) */
  last: (value: R) => U;
}

/**
 * An async generator as an Observable, the one way an SSE route streams one. Subscribing
 * iterates it one step at a time (the generator runs no further ahead than its consumer); its
 * end completes the Observable, its error is the Observable's error. Unsubscribing before its
 * end (the client left) calls `gen.return()`: the generator's `finally` runs (once the step it
 * is in settles: the route's abort signal ends that step), and nothing it yields after the
 * teardown is emitted. A hand-rolled `gen.next()` loop left the generator suspended instead.
 * `abort` is aborted in the teardown itself, for what must stop before the generator's step
 * settles (a run waiting for its next event is cancelled by it).
 */
export function fromGenerator<T>(gen: AsyncGenerator<T, unknown, undefined>, options?: FromGeneratorOptions): Observable<T>;
export function fromGenerator<T, R, U>(gen: AsyncGenerator<T, R, undefined>, options: FromGeneratorOptions & GeneratorMapping<T, R, U>): Observable<U>;
export function fromGenerator<T, R, U>(gen: AsyncGenerator<T, R, undefined>, options: FromGeneratorOptions & Partial<GeneratorMapping<T, R, U>> = {}): Observable<T | U> {
  const mapping = options.each && options.last ? { each: options.each, last: options.last } : undefined;
  return new Observable<T | U>((subscriber) => {
    const run = { ended: false };
    pump(gen, subscriber, run, mapping).catch((err: unknown) => {
      run.ended = true;
      subscriber.error(err);
    });
    return () => {
      if (run.ended) return;
      run.ended = true;
      options.abort?.abort();
      // queued behind the step in progress, if any: the generator's `finally` runs after it
      gen.return(undefined as R).catch(() => undefined);
    };
  });
}

/** Steps the generator while someone subscribes, one value at a time. */
async function pump<T, R, U>(gen: AsyncGenerator<T, R, undefined>, subscriber: Subscriber<T | U>, run: { ended: boolean }, mapping?: GeneratorMapping<T, R, U>): Promise<void> {
  while (!subscriber.closed) {
    const step = await gen.next();
    // torn down while the step ran: what it gave is not emitted
    if (subscriber.closed) return;
    if (step.done) {
      run.ended = true;
      if (mapping) subscriber.next(mapping.last(step.value));
      return subscriber.complete();
    }
    subscriber.next(mapping ? mapping.each(step.value) : step.value);
  }
}
