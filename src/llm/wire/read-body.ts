import type { RequestGuard } from '../request-guard';

/**
 * Reads a fetch body chunk by chunk under a {@link RequestGuard}: the idle timer runs while each
 * read waits, and each read is raced against the guard so an abort, a timeout or a stall ends
 * the loop at once even if the underlying stream does not notice the signal. Throws the guard's
 * reason when it fires; the reader is always released (and cancelled when not read to the end).
 */
export async function* readBody(body: ReadableStream<Uint8Array> | null, guard: RequestGuard): AsyncGenerator<Uint8Array> {
  if (!body) return;
  const reader = body.getReader();
  let done = false;
  try {
    while (true) {
      guard.armIdle();
      const result = await Promise.race([reader.read(), guard.fired]);
      guard.disarmIdle();
      if (result.done) {
        done = true;
        return;
      }
      if (result.value && result.value.byteLength > 0) yield result.value;
    }
  } finally {
    guard.disarmIdle();
    if (!done) reader.cancel().catch(() => undefined);
    else reader.releaseLock();
  }
}
