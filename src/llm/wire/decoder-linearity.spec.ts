import { LineDecoder } from './line-decoder';
import { SseDecoder } from './sse-decoder';

/**
 * A long line arriving in many small chunks must cost time proportional to its length. A decoder
 * that re-scans (or re-copies) its buffer on every chunk is quadratic: 16× the input costs 256×
 * the time. The bound here (64×, 4× the linear figure) leaves room for a busy shared machine and
 * garbage collection of the larger buffers (24× over an 8× step failed once under load), and
 * stays far below quadratic.
 */
const CHUNK = 64;

function feed(decode: (chunk: Uint8Array) => number, finish: () => number, size: number): number {
  const piece = new TextEncoder().encode('x'.repeat(CHUNK));
  let got = 0;
  for (let sent = 0; sent < size; sent += CHUNK) got += decode(piece);
  return got + finish();
}

function fastest(run: () => void): number {
  let best = Number.POSITIVE_INFINITY;
  for (let i = 0; i < 3; i++) {
    const t0 = process.hrtime.bigint();
    run();
    best = Math.min(best, Number(process.hrtime.bigint() - t0));
  }
  return best;
}

const MB = 1024 * 1024;

describe('model-stream decoders are linear in their input', () => {
  it('NDJSON: one 8 MB line in 64-byte chunks costs about 16× one 512 KB line', () => {
    const run = (size: number) => () => {
      const d = new LineDecoder(16 * MB);
      d.push('{"message":"');
      const lines = feed((c) => d.push(c).length, () => d.push('"}\n').length, size);
      expect(lines).toBe(1);
    };
    run(MB / 2)(); // warm-up
    const small = fastest(run(MB / 2));
    const large = fastest(run(8 * MB));
    expect(large / small).toBeLessThan(64);
  });

  it('SSE: one 8 MB data line in 64-byte chunks costs about 16× one 512 KB line', () => {
    const run = (size: number) => () => {
      const d = new SseDecoder(16 * MB);
      d.push('data: ');
      const messages = feed((c) => d.push(c).length, () => d.push('\n\n').length, size);
      expect(messages).toBe(1);
    };
    run(MB / 2)();
    const small = fastest(run(MB / 2));
    const large = fastest(run(8 * MB));
    expect(large / small).toBeLessThan(64);
  });
});
