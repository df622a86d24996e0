/**
 * npm run bench:decoders
 *
 * The model-stream decoders on one long line arriving in 64-byte chunks (what a hostile or
 * broken server can send): a decoder that re-scans or re-copies its buffer per chunk is
 * quadratic, 16× the input costing 256× the time; a linear one costs about 16×. For each of
 * NDJSON (LineDecoder, Ollama) and SSE (SseDecoder, OpenAI-compatible): the fastest of 3 runs at
 * 512 KB and 8 MB, the growth factor, and in the same run the floor — the least code doing the
 * same job (collect the chunks, join once, split at the end) — with Orion's ratio to it.
 * Was a timed assertion in the test suite; figures belong here.
 */
import { LineDecoder } from '../src/llm/wire/line-decoder';
import { SseDecoder } from '../src/llm/wire/sse-decoder';
import { BenchReport } from './report';

const CHUNK = 64;
const MB = 1024 * 1024;
const piece = new TextEncoder().encode('x'.repeat(CHUNK));

function fastest(run: () => number): { ms: number; out: number } {
  let best = Number.POSITIVE_INFINITY;
  let out = 0;
  for (let i = 0; i < 3; i++) {
    const t0 = process.hrtime.bigint();
    out = run();
    best = Math.min(best, Number(process.hrtime.bigint() - t0) / 1e6);
  }
  return { ms: best, out };
}

function feed(push: (c: Uint8Array | string) => number, size: number, head: string, tail: string): number {
  let got = push(head);
  for (let sent = 0; sent < size; sent += CHUNK) got += push(piece);
  return got + push(tail);
}

const decoders: Record<string, (size: number) => number> = {
  'NDJSON (LineDecoder)': (size) => {
    const d = new LineDecoder(16 * MB);
    return feed((c) => d.push(c).length, size, '{"message":"', '"}\n');
  },
  'SSE (SseDecoder)': (size) => {
    const d = new SseDecoder(16 * MB);
    return feed((c) => d.push(c).length, size, 'data: ', '\n\n');
  },
  'floor: collect, join once, split': (size) => {
    const parts: Buffer[] = [];
    const got = feed((c) => (parts.push(Buffer.from(typeof c === 'string' ? c : c)), 0), size, 'data: ', '\n\n');
    return got + Buffer.concat(parts).toString('utf8').split('\n\n').length - 1;
  },
};

console.log('| decoder | 512 KB ms | 8 MB ms | growth (16× input) | 8 MB × floor |');
console.log('|---|---:|---:|---:|---:|');
const rows: Array<[string, number, number]> = [];
for (const [name, run] of Object.entries(decoders)) {
  run(MB / 2); // warm-up
  const small = fastest(() => run(MB / 2));
  const large = fastest(() => run(8 * MB));
  if (large.out !== 1) throw new Error(`${name}: decoded ${large.out} messages from one line`);
  rows.push([name, small.ms, large.ms]);
}
const floor = rows.find(([n]) => n.startsWith('floor'))![2];
const report = new BenchReport(
  'decoders',
  'The model-stream decoders (NDJSON LineDecoder, SSE SseDecoder) on one long line arriving in 64-byte chunks, at 512 KB and 8 MB: ' +
    'a linear decoder costs about 16× for 16× the input, a quadratic one 256×. Floor: collect the chunks, join once, split at the end.',
  { chunkBytes: CHUNK, sizes: ['512 KB', '8 MB'], runsPerSize: 3, statistic: 'fastest of 3' },
);
for (const [name, small, large] of rows) {
  console.log(`| ${name} | ${small.toFixed(1)} | ${large.toFixed(1)} | ${(large / small).toFixed(1)}× | ${name.startsWith('floor') ? '' : `${(large / floor).toFixed(1)}×`} |`);
  const key = name.startsWith('floor') ? 'floor' : name.startsWith('NDJSON') ? 'ndjson' : 'sse';
  report.add(`${key}.512kb.ms`, `${name}: 512 KB`, small, 'ms');
  report.add(`${key}.growth`, `${name}: growth for 16× the input`, large / small, '×');
  report.add(`${key}.8mb.ms`, `${name}: 8 MB`, large, 'ms', key === 'floor' ? undefined : { floor });
}
report.write();
