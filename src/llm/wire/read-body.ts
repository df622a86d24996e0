import type { Readable } from 'node:stream';
import type { RequestGuard } from '../request-guard';

/**
 * Reads a response body chunk by chunk under a {@link RequestGuard}: the idle timer runs while
 * each read waits, and when the guard fires (an abort, a timeout, a stall) the body is
 * cancelled, which settles a pending read at once even if the underlying stream does not notice
 * the signal; the guard's reason is then thrown. The body is always released (and cancelled
 * when not read to the end).
 *
 * Two kinds of body: a web ReadableStream (a `fetch` Response's) and a Node stream (undici's
 * `request`, see modelFetch's StreamedResponse), read as they are rather than one wrapped in
 * the other, which would cost a web stream's promises on every chunk.
 *
 * The guard is listened to once per body, not raced against each read: a race per read allocated
 * a promise per chunk and left a reaction per chunk on the guard until the request ended.
 */
export async function* readBody(body: ReadableStream<Uint8Array> | Readable | null, guard: RequestGuard): AsyncGenerator<Uint8Array> {
  if (!body) return;
  const source = body instanceof ReadableStream ? webSource(body) : nodeSource(body);
  const signal = guard.signal;
  const stop = () => source.cancel(signal.reason);
  signal.addEventListener('abort', stop, { once: true });
  let done = false;
  try {
    while (true) {
      if (signal.aborted) throw signal.reason;
      guard.armIdle();
      let result: IteratorResult<Uint8Array, unknown>;
      try {
        result = await source.read();
      } catch (err) {
        throw signal.aborted ? signal.reason : err;
      } finally {
        guard.disarmIdle();
      }
      if (signal.aborted) throw signal.reason;
      if (result.done) {
        done = true;
        return;
      }
      if (result.value && result.value.byteLength > 0) yield result.value;
    }
  } finally {
    signal.removeEventListener('abort', stop);
    if (done) source.release();
    else source.cancel();
  }
}

interface BodySource {
  read(): Promise<IteratorResult<Uint8Array, unknown>>;
  /** stops the body; a pending read settles */
  cancel(reason?: unknown): void;
  /** the body was read to its end */
  release(): void;
}

function webSource(body: ReadableStream<Uint8Array>): BodySource {
  const reader = body.getReader();
  return {
    read: () => reader.read() as Promise<IteratorResult<Uint8Array, unknown>>,
    cancel: (reason) => void reader.cancel(reason).catch(() => undefined),
    release: () => reader.releaseLock(),
  };
}

function nodeSource(body: Readable): BodySource {
  const chunks = body[Symbol.asyncIterator]() as AsyncIterator<Uint8Array>;
  return {
    read: () => chunks.next(),
    // destroying the stream settles a pending next() (with the error, or as done)
    cancel: (reason) => void (body.destroyed || body.destroy(reason instanceof Error ? reason : undefined)),
    release: () => undefined,
  };
}
