import type { RequestGuard } from '../request-guard';

/**
 * Reads a fetch body chunk by chunk under a {@link RequestGuard}: the idle timer runs while each
 * read waits, and when the guard fires (an abort, a timeout, a stall) the reader is cancelled,
 * which settles a pending read at once even if the underlying stream does not notice the signal;
 * the guard's reason is then thrown. The reader is always released (and cancelled when not read
 * to the end).
 *
 * The guard is listened to once per body, not raced against each read: a race per read allocated
 * a promise per chunk and left a reaction per chunk on the guard until the request ended.
 */
export async function* readBody(body: ReadableStream<Uint8Array> | null, guard: RequestGuard): AsyncGenerator<Uint8Array> {
  if (!body) return;
  const reader = body.getReader();
  const signal = guard.signal;
  const stop = () => void reader.cancel(signal.reason).catch(() => undefined);
  signal.addEventListener('abort', stop, { once: true });
  let done = false;
  try {
    while (true) {
      if (signal.aborted) throw signal.reason;
      guard.armIdle();
      let result: ReadableStreamReadResult<Uint8Array>;
      try {
        result = await reader.read();
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
    if (!done) reader.cancel().catch(() => undefined);
    else reader.releaseLock();
  }
}
