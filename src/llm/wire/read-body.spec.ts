import { RequestGuard } from '../request-guard';
import { Readable } from 'node:stream';
import { readBody } from './read-body';
import { scriptedDelay } from '../../../test/support/scripted-delay';

const bytes = (s: string) => new TextEncoder().encode(s);
const text = (chunks: Uint8Array[]) => chunks.map((c) => new TextDecoder().decode(c)).join('');

/** A body that sends `parts` and then either ends or goes silent, ignoring cancellation when `deaf`. */
function webBody(parts: string[], then: 'end' | 'silence', onCancel?: () => void): ReadableStream<Uint8Array> {
  let i = 0;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (i < parts.length) return controller.enqueue(bytes(parts[i++]));
      if (then === 'end') return controller.close();
      return new Promise<void>(() => undefined); // never answers, never notices an abort
    },
    cancel() {
      onCancel?.();
    },
  });
}

/** The same as a Node stream (what undici's request API gives, see modelFetch). */
function nodeBody(parts: string[], then: 'end' | 'silence', onCancel?: () => void): Readable {
  let i = 0;
  return new Readable({
    read() {
      if (i < parts.length) this.push(Buffer.from(parts[i++]));
      else if (then === 'end') this.push(null);
      // silence: never pushes again
    },
    destroy(err, cb) {
      onCancel?.();
      cb(err);
    },
  });
}

type Body = ReadableStream<Uint8Array> | Readable;

async function collect(b: Body, guard: RequestGuard): Promise<{ chunks: Uint8Array[]; error?: Error }> {
  const chunks: Uint8Array[] = [];
  try {
    for await (const c of readBody(b, guard)) chunks.push(c);
    return { chunks };
  } catch (err) {
    return { chunks, error: err as Error };
  } finally {
    guard.dispose();
  }
}

describe.each([
  ['a web stream', webBody],
  ['a Node stream', nodeBody],
] as const)('readBody of %s', (_kind, body: (parts: string[], then: 'end' | 'silence', onCancel?: () => void) => Body) => {
  it('yields the body chunk by chunk, in order, to its end', async () => {
    const got = await collect(body(['a', 'bc', 'd'], 'end'), new RequestGuard({ timeoutMs: 5000, idleTimeoutMs: 1000 }));
    expect(got.error).toBeUndefined();
    expect(text(got.chunks)).toBe('abcd');
  });

  it('ends a stalled body at the idle timeout even though the stream ignores the abort', async () => {
    const guard = new RequestGuard({ timeoutMs: 5000, idleTimeoutMs: 80 });
    const got = await collect(body(['a'], 'silence'), guard);
    expect(text(got.chunks)).toBe('a');
    expect(guard.cause).toBe('idle_timeout');
    expect(got.error?.name).toBe('AbortError');
  });

  it("stops at the caller's abort between chunks and cancels the stream", async () => {
    const caller = new AbortController();
    let cancelled = false;
    const guard = new RequestGuard({ signal: caller.signal, timeoutMs: 5000, idleTimeoutMs: 1000 });
    const chunks: Uint8Array[] = [];
    let error: Error | undefined;
    try {
      for await (const c of readBody(body(['a', 'b', 'c'], 'end', () => (cancelled = true)), guard)) {
        chunks.push(c);
        caller.abort();
      }
    } catch (err) {
      error = err as Error;
    }
    guard.dispose();
    expect(text(chunks)).toBe('a');
    expect(guard.cause).toBe('aborted');
    expect(error?.name).toBe('AbortError');
    expect(cancelled).toBe(true);
  });

  it('does not count a slow consumer as server silence', async () => {
    const guard = new RequestGuard({ timeoutMs: 5000, idleTimeoutMs: 60 });
    const chunks: Uint8Array[] = [];
    // the scripted consumer: slower than the idle timeout between reads (the delay is the behaviour under test)
    const slowConsumer = async (source: AsyncIterable<Uint8Array>) => {
      for await (const c of source) {
        chunks.push(c);
        await scriptedDelay(150);
      }
    };
    await slowConsumer(readBody(body(['a', 'b', 'c'], 'end'), guard));
    guard.dispose();
    expect(text(chunks)).toBe('abc');
    expect(guard.cause).toBeUndefined();
  });

  it('keeps one idle timer per request, however many chunks arrive', async () => {
    const parts = Array.from({ length: 500 }, (_, i) => `${i},`);
    const spy = jest.spyOn(global, 'setTimeout');
    try {
      const got = await collect(body(parts, 'end'), new RequestGuard({ timeoutMs: 5000, idleTimeoutMs: 1000 }));
      expect(text(got.chunks)).toBe(parts.join(''));
      // the overall timer and the idle timer (a timer per read made 501)
      expect(spy.mock.calls.length).toBeLessThanOrEqual(2);
    } finally {
      spy.mockRestore();
    }
  });
});
