/**
 * npm run bench:protocol
 *
 * One two-stage turn — two tool cycles and 240 text deltas — through the real TwoStageStrategy
 * generator with an in-process scripted adapter, against "the floor": a plain async-generator
 * loop that consumes the same model events, yields the same chunks and runs the same tools, with
 * none of the protocol's bookkeeping (tool-call accumulation, signatures, guards, phase events,
 * traces, checkpoints). Prints µs per turn (p50, p99), bytes allocated per turn and the ratio.
 * Target (issue #4): ≤ 2× the floor.
 *
 * Allocation is measured as heap growth across a batch of turns during which no garbage
 * collection ran (checked with a `gc` PerformanceObserver; a batch with a GC is discarded), so
 * it needs a large young generation: the script re-executes itself with --max-semi-space-size.
 */
import { spawnSync } from 'node:child_process';
import { PerformanceObserver, performance } from 'node:perf_hooks';
import type { LlmAdapter, LlmToolSpec } from '../src/llm/llm-adapter.port';
import type { ToolCallRequest, ToolRunner } from '../src/tools/tool-runner.port';
import type { ToolRunResult } from '../src/tools/tool-definition';
import type { TraceSink } from '../src/trace/trace-sink.port';
import type { ProtocolEvent } from '../src/orchestration/protocol-event';
import type { ProtocolExecutionContext } from '../src/orchestration/protocol-strategy';
import { TwoStageStrategy } from '../src/orchestration/protocols/two-stage/two-stage.strategy';
import { ScriptedAdapter, TEXT_DELTAS } from './support/scripted-model';
import { BenchReport } from './report';

if (!process.execArgv.some((a) => a.startsWith('--max-semi-space-size'))) {
  const r = spawnSync(process.execPath, ['--max-semi-space-size=128', '--min-semi-space-size=128', '--expose-gc', ...process.execArgv, ...process.argv.slice(1)], { stdio: 'inherit' });
  process.exit(r.status ?? 1);
}

const TURNS = Number(process.env.BENCH_TURNS ?? 2000);
const WARMUP = 300;

const SPECS: LlmToolSpec[] = [
  { name: 'list_files', description: 'list', parameters: { type: 'object', properties: { path: { type: 'string' } } } },
  { name: 'read_file', description: 'read', parameters: { type: 'object', properties: { path: { type: 'string' } } } },
];

/** The same tools for both loops: a fixed small result. */
const tools: ToolRunner = {
  async run(call: ToolCallRequest): Promise<ToolRunResult> {
    const output = { entries: ['a.md', 'b.md'], name: call.name };
    return { toolName: call.name, args: call.arguments, outcome: 'success', output, outputText: JSON.stringify(output), truncated: false, isError: false, latencyMs: 0, sources: [], signature: null };
  },
  signature(call: ToolCallRequest, projectId: string): string | null {
    return `${call.name}\u001f${typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments)}\u001f${projectId}`;
  },
  async specs() {
    return SPECS;
  },
  redactArgs: (_name: string, args: unknown) => args,
};
const trace: TraceSink = { record() {}, flush: async () => undefined };

// ---- the two loops ----
const strategy = new TwoStageStrategy();
async function protocolTurn(): Promise<number> {
  const ctx: ProtocolExecutionContext = {
    requestId: 'r',
    projectId: 'p',
    conversationId: 'c',
    messages: [{ role: 'user', content: 'Summarize docs/roadmap.md' }],
    mode: 'act',
    llm: new ScriptedAdapter(),
    tools,
    trace,
    budgets: { maxPhaseCycles: 3, maxDuplicateAttempts: 3, maxIterations: 10 },
    debugShowToolResults: false,
    signal: new AbortController().signal,
    control: { pauseRequested: () => false },
  };
  let n = 0;
  for await (const ev of strategy.execute(ctx)) n += ev.type === 'chunk' ? 1 : 0;
  return n;
}

/** The floor: read the same model events, yield the chunks, run each streamed call, answer. */
async function* floorGenerator(llm: LlmAdapter): AsyncGenerator<ProtocolEvent> {
  for (let step = 0; step < 3; step++) {
    let name = '';
    let args = '';
    for await (const ev of llm.stream({ messages: [] })) {
      if (ev.type === 'text-delta') yield { type: 'chunk', content: ev.text };
      else if (ev.type === 'tool-call-delta') {
        name ||= ev.name ?? '';
        args += ev.argumentsFragment;
      }
    }
    if (name) await tools.run({ name, arguments: args }, undefined as never);
  }
}
async function floorTurn(): Promise<number> {
  let n = 0;
  for await (const ev of floorGenerator(new ScriptedAdapter())) n += ev.type === 'chunk' ? 1 : 0;
  return n;
}

// ---- measurement ----
let gcSeen = 0;
new PerformanceObserver((list) => (gcSeen += list.getEntries().length)).observe({ entryTypes: ['gc'] });
const gc = (globalThis as { gc?: () => void }).gc!;

async function measure(turn: () => Promise<number>) {
  const expected = await turn();
  for (let i = 0; i < WARMUP; i++) await turn();
  const times: number[] = [];
  for (let i = 0; i < TURNS; i++) {
    const t0 = performance.now();
    const n = await turn();
    times.push((performance.now() - t0) * 1000);
    if (n !== expected) throw new Error('a turn produced a different number of chunks');
  }
  times.sort((a, b) => a - b);
  // allocation: heap growth over GC-free batches of 20 turns
  const perTurn: number[] = [];
  for (let attempt = 0; attempt < 40 && perTurn.length < 10; attempt++) {
    gc();
    await new Promise((r) => setTimeout(r, 5)); // let the GC's own observer entries arrive
    const before = gcSeen;
    const h0 = process.memoryUsage().heapUsed;
    for (let i = 0; i < 20; i++) await turn();
    const h1 = process.memoryUsage().heapUsed;
    // a scavenge inside the batch would hide allocations: such batches (seen once the
    // observer's entries have arrived) are discarded
    await new Promise((r) => setTimeout(r, 5));
    if (gcSeen === before && h1 > h0) perTurn.push((h1 - h0) / 20);
  }
  perTurn.sort((a, b) => a - b);
  const q = (p: number) => times[Math.min(times.length - 1, Math.floor(p * times.length))];
  return { chunks: expected, p50: q(0.5), p99: q(0.99), mean: times.reduce((a, b) => a + b, 0) / times.length, bytes: perTurn.length ? perTurn[Math.floor(perTurn.length / 2)] : NaN };
}

async function main() {
  // interleave to share machine noise fairly; report the better of two rounds for each
  const floorA = await measure(floorTurn);
  const protoA = await measure(protocolTurn);
  const floorB = await measure(floorTurn);
  const protoB = await measure(protocolTurn);
  const floor = floorA.p50 <= floorB.p50 ? floorA : floorB;
  const proto = protoA.p50 <= protoB.p50 ? protoA : protoB;
  const fmt = (x: number) => x.toFixed(1).padStart(9);
  const kb = (x: number) => (Number.isNaN(x) ? '      n/a' : `${(x / 1024).toFixed(1).padStart(7)}KB`);
  console.log(`two-stage turn: 2 tool cycles, ${TEXT_DELTAS} text deltas, ${TURNS} turns per round (Node ${process.version})`);
  console.log('                     p50 µs    p99 µs   mean µs   alloc/turn');
  console.log(`floor (plain loop) ${fmt(floor.p50)} ${fmt(floor.p99)} ${fmt(floor.mean)}   ${kb(floor.bytes)}`);
  console.log(`two-stage protocol ${fmt(proto.p50)} ${fmt(proto.p99)} ${fmt(proto.mean)}   ${kb(proto.bytes)}`);
  const ratio = proto.p50 / floor.p50;
  console.log(`ratio to the floor: p50 ${ratio.toFixed(2)}×, p99 ${(proto.p99 / floor.p99).toFixed(2)}×, alloc ${(proto.bytes / floor.bytes).toFixed(2)}× (target ≤ 2×: ${ratio <= 2 ? 'met' : 'NOT met'})`);
  new BenchReport(
    'protocol',
    'One two-stage turn (two tool cycles, 240 text deltas) through the real TwoStageStrategy generator with a scripted in-process model, ' +
      'against the floor: a plain async-generator loop consuming the same model events and running the same tools. Target: p50 ≤ 2× the floor.',
    { turnsPerRound: TURNS, warmup: WARMUP, rounds: 2, textDeltas: TEXT_DELTAS, toolCycles: 2, statistic: 'better of 2 interleaved rounds by p50' },
  )
    .add('turn.p50.us', 'two-stage protocol: µs per turn, p50', proto.p50, 'µs', { floor: floor.p50 })
    .add('turn.p99.us', 'two-stage protocol: µs per turn, p99', proto.p99, 'µs', { floor: floor.p99 })
    .add('turn.mean.us', 'two-stage protocol: µs per turn, mean', proto.mean, 'µs', { floor: floor.mean })
    .add('turn.alloc.kb', 'two-stage protocol: KB allocated per turn', proto.bytes / 1024, 'KB', { floor: floor.bytes / 1024 })
    .write();
  if (process.argv.includes('--json')) {
    console.log(JSON.stringify({ floorP50Us: floor.p50, floorP99Us: floor.p99, protocolP50Us: proto.p50, protocolP99Us: proto.p99, floorAllocBytes: floor.bytes, protocolAllocBytes: proto.bytes, ratioP50: ratio }));
  }
}

void main();
