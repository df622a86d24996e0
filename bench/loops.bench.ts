/**
 * npm run bench:loops
 *
 * The content-loop detector (src/orchestration/loops/content-loop.ts) over the loop corpus
 * (test/fixtures/loops), streamed in deltas of 3 to 12 characters:
 *
 * 1. Per kind of sample: how many loops it caught, how many legitimate samples it fired on (the
 *    false positives), and what reached the client before it fired: the repeated characters
 *    after the first copy (shownEnd − atChar − period) and the copies shown; the copies written
 *    before the loop was declared are the loop's (held back, dropped).
 * 2. Its CPU per streamed character against the floor, a bare loop over the same deltas that only
 *    reads each character (sums the char codes), in the same run.
 * 3. What it adds to a turn's streaming path at 100 deltas per turn: 100-delta answers through
 *    the real ModelStream, with and without the detector's push on each delta, (a) from an
 *    in-process scripted adapter (the model events handed over directly: the least the path
 *    costs) and (b) through the OpenAI-compatible adapter decoding the same answer from SSE bytes
 *    (what a provider's stream costs, without the network), with ModelStream's own detector on
 *    or off (its `contentLoop` setting); and (c) the whole service in one process (HTTP,
 *    validation, rows, the two-stage generator, real file tools, stored events, SSE, trace: what a
 *    turn costs), with the detector on (LOOP_CONTENT_REPEATS' default) or off (0), turn by turn
 *    alternating on the same instance. Goal: ≤ 5 %. Needs `nest build` (for c).
 */
import { performance } from 'node:perf_hooks';
import type { LlmAdapter, LlmStreamEvent } from '../src/llm/llm-adapter.port';
import { OpenAiCompatibleAdapter } from '../src/llm/adapters/openai-compatible.adapter';
import { ModelStream } from '../src/orchestration/model-stream';
import { ContentLoopDetector, DEFAULT_CONTENT_LOOP, type ContentLoop, type ContentLoopSettings } from '../src/orchestration/loops/content-loop';
import { deltasOf, textSamples, type TextSample } from '../test/fixtures/loops/corpus';
import { BenchReport } from './report';
import { shownCopies } from '../src/orchestration/loops/content-loop-details';
import { serviceInProcess } from './support/service-in-process';
import { TEXT_DELTAS } from './support/scripted-model';

// runtime from dist (the service's classes carry Nest's decorator metadata there), types from src
/* eslint-disable @typescript-eslint/no-require-imports */
const { OrchestrationService } = require('../dist/orchestration/orchestration.service') as typeof import('../src/orchestration/orchestration.service');

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 9);
const TURNS = Number(process.env.BENCH_TURNS ?? 1000);
const SERVICE_TURNS = Number(process.env.BENCH_SERVICE_TURNS ?? 100);
const DELTAS_PER_TURN = 100;

const samples = textSamples();

// ---- 1. detection per kind ----
interface Outcome {
  sample: TextSample;
  loop: ContentLoop | null;
}
function detect(sample: TextSample): Outcome {
  const d = new ContentLoopDetector();
  for (const delta of deltasOf(sample.text)) {
    const loop = d.push(delta);
    if (loop) return { sample, loop };
  }
  return { sample, loop: null };
}
const outcomes = samples.map(detect);
const kinds = [...new Set(samples.map((s) => `${s.expect}\u0000${s.kind}`))];
const order = { loop: 0, missed: 1, legit: 2 } as const;
kinds.sort((a, b) => order[a.split('\u0000')[0] as keyof typeof order] - order[b.split('\u0000')[0] as keyof typeof order] || a.localeCompare(b));
const kindRows = kinds.map((key) => {
  const [expect, kind] = key.split('\u0000');
  const of = outcomes.filter((o) => o.sample.expect === expect && o.sample.kind === kind);
  const fired = of.filter((o) => o.loop);
  const shown = fired.map((o) => o.loop!.shownEnd - o.loop!.atChar - o.loop!.period);
  const copies = fired.map((o) => shownCopies(o.loop!));
  const max = (xs: number[]) => (xs.length ? String(Math.max(...xs)) : '-');
  const mean = (xs: number[]) => (xs.length ? String(Math.round(xs.reduce((a, b) => a + b, 0) / xs.length)) : '-');
  return [expect === 'legit' ? 'legitimate' : expect === 'missed' ? 'known miss' : 'loop', kind, String(of.length), expect === 'legit' ? '-' : String(fired.length), expect === 'legit' ? String(fired.length) : '-', `${mean(shown)} / ${max(shown)}`, max(copies)];
});
const loops = outcomes.filter((o) => o.sample.expect === 'loop');
const legit = outcomes.filter((o) => o.sample.expect === 'legit');
const caught = loops.filter((o) => o.loop).length;
const falsePositives = legit.filter((o) => o.loop).length;
const issueCase = outcomes.find((o) => o.sample.id === 'sentence-48x150')!.loop!;

console.log(`content-loop detector, defaults ${JSON.stringify(DEFAULT_CONTENT_LOOP)}, deltas of 3-12 chars`);
console.log('| sample | kind | samples | caught | false positives | repeated chars reached the client, mean / max | copies, max |');
console.log('|---|---|---:|---:|---:|---:|---:|');
for (const r of kindRows) console.log(`| ${r.join(' | ')} |`);
console.log(`loops caught ${caught}/${loops.length}; false positives ${falsePositives}/${legit.length}; the 48-char sentence ×150: ${shownCopies(issueCase)} copies streamed (${issueCase.repeats} written before the stop)`);

// ---- 1b. the defaults: each setting moved alone, over the corpus ----
function sweep(settings: ContentLoopSettings): { fp: number; caught: number; copies: number } {
  let fp = 0;
  let got = 0;
  let copies = 0;
  for (const s of samples) {
    if (s.expect === 'missed') continue;
    const d = new ContentLoopDetector(settings);
    let loop: ContentLoop | null = null;
    for (const delta of deltasOf(s.text)) if ((loop = d.push(delta))) break;
    d.release();
    if (s.expect === 'legit' && loop) fp++;
    if (s.expect === 'loop' && loop) {
      got++;
      if (!/^(code block|table)/.test(s.kind) && loop.period >= 12) copies = Math.max(copies, shownCopies(loop));
    }
  }
  return { fp, caught: got, copies };
}
const SWEEP: Array<[keyof ContentLoopSettings, number[]]> = [
  ['repeats', [4, 5, 6, 8, 10, 12]],
  ['minSpan', [40, 60, 90, 120, 160]],
  ['codeRepeats', [3, 6, 10]],
  ['codeMinSpan', [400, 800, 1200, 1600, 2400]],
];
const sweepRows: string[][] = [];
for (const [key, values] of SWEEP) {
  for (const v of values) {
    const r = sweep({ ...DEFAULT_CONTENT_LOOP, [key]: v });
    sweepRows.push([key, String(v), v === DEFAULT_CONTENT_LOOP[key] ? 'default' : '', String(r.fp), `${r.caught}/${loops.length}`, String(r.copies)]);
  }
}
console.log('\nEach setting moved alone (the others at their defaults):');
console.log('| setting | value | | false positives | loops caught | most copies of a prose sentence of 12+ chars |');
for (const r of sweepRows) console.log(`| ${r.join(' | ')} |`);

// ---- 2. CPU per character against a bare loop ----
function cpuUs(run: () => number): number {
  const c0 = process.cpuUsage();
  const out = run();
  const c = process.cpuUsage(c0);
  if (out === -1) console.log('');
  return c.user + c.system;
}
/** Alternates the two, `ROUNDS` times; the least CPU of each (the run least disturbed by other load). */
function compare(a: () => number, b: () => number): [number, number] {
  let bestA = Infinity;
  let bestB = Infinity;
  a();
  b();
  for (let r = 0; r < ROUNDS; r++) {
    bestA = Math.min(bestA, cpuUs(a));
    bestB = Math.min(bestB, cpuUs(b));
  }
  return [bestA, bestB];
}

function charCost(set: Outcome[], repeat: number): { detectorNs: number; floorNs: number; chars: number } {
  // each sample's deltas up to where the detector stopped it (all of it when it did not fire)
  const streams = set.map((o) => {
    const ds = deltasOf(o.sample.text);
    if (!o.loop) return ds;
    let fed = 0;
    const kept: string[] = [];
    for (const d of ds) {
      if (fed >= o.loop.endChar) break;
      kept.push(d);
      fed += d.length;
    }
    return kept;
  });
  const chars = streams.reduce((n, ds) => n + ds.reduce((m, d) => m + d.length, 0), 0) * repeat;
  const [det, floor] = compare(
    () => {
      let n = 0;
      for (let r = 0; r < repeat; r++)
        for (const ds of streams) {
          const d = new ContentLoopDetector();
          for (const delta of ds) if (d.push(delta)) n++;
          d.release();
        }
      return n;
    },
    () => {
      let sum = 0;
      for (let r = 0; r < repeat; r++) for (const ds of streams) for (const delta of ds) for (let k = 0; k < delta.length; k++) sum += delta.charCodeAt(k);
      return sum;
    },
  );
  return { detectorNs: (det * 1000) / chars, floorNs: (floor * 1000) / chars, chars };
}
const legitCost = charCost(legit, 40);
const loopCost = charCost(loops, 40);
console.log(`\nCPU per streamed character (least of ${ROUNDS} alternating rounds):`);
console.log(`  legitimate samples, whole: detector ${legitCost.detectorNs.toFixed(2)} ns/char, bare loop ${legitCost.floorNs.toFixed(2)} ns/char (${(legitCost.detectorNs / legitCost.floorNs).toFixed(1)}×)`);
console.log(`  looping samples, up to the stop: detector ${loopCost.detectorNs.toFixed(2)} ns/char, bare loop ${loopCost.floorNs.toFixed(2)} ns/char (${(loopCost.detectorNs / loopCost.floorNs).toFixed(1)}×)`);

// ---- 3. a turn's streaming path at 100 deltas per turn ----
// the turns' answers, 100 deltas of 3-12 characters each, each turn starting at the next sample
// (so a turn never starts inside another sample's code block): "typical" from the natural
// answers (prose in six languages), "repetitive" from the whole legitimate corpus (lists,
// tables, code, logs, refrains: the detector's busiest legitimate input)
function turnsOf(set: Outcome[]): string[][] {
  return set.map((_, j) => {
    let text = '';
    for (let k = j; text.length < 12 * DELTAS_PER_TURN; k++) text += set[k % set.length].sample.text + '\n\n';
    return deltasOf(text).slice(0, DELTAS_PER_TURN);
  });
}
const TURN_TEXTS = { typical: turnsOf(legit.filter((o) => o.sample.kind === 'natural answer')), repetitive: turnsOf(legit) };
type TurnText = keyof typeof TURN_TEXTS;
let turnsText: string[][] = TURN_TEXTS.typical;
const charsPerTurn = (t: string[][]) => t.reduce((n, x) => n + x.reduce((m, d) => m + d.length, 0), 0) / t.length;

const finish: LlmStreamEvent = { type: 'finish', reason: 'stop', usage: { promptTokens: 100, completionTokens: 100, totalTokens: 200 } };
const scriptedOf = (turns: string[][]) => turns.map((t) => [...t.map((text): LlmStreamEvent => ({ type: 'text-delta', text })), finish]);
let scriptedTurns: LlmStreamEvent[][] = [];
let turnNo = 0;
/** (a) the model events handed over directly, as bench:protocol's scripted model does */
const scripted: LlmAdapter = {
  provider: 'bench',
  model: 'bench',
  async *stream(_req, signal) {
    for (const ev of scriptedTurns[turnNo % scriptedTurns.length]) {
      if (signal?.aborted) return;
      yield ev;
    }
  },
  complete: () => Promise.reject(new Error('not used')),
  capabilities: async () => ({ provider: 'bench', model: 'bench', toolCalling: true, contextWindow: 32768, replay: false }),
};

/** (b) the same answers as a provider sends them: Chat Completions SSE, one network chunk per event */
const encoder = new TextEncoder();
const sseOf = (turns: string[][]) => turns.map((t) => [
  ...t.map((content) => encoder.encode(`data: ${JSON.stringify({ id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 0, model: 'm', choices: [{ index: 0, delta: { content }, finish_reason: null }] })}\n\n`)),
  encoder.encode(`data: ${JSON.stringify({ id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 0, model: 'm', choices: [{ index: 0, delta: {}, finish_reason: 'stop' }], usage: { prompt_tokens: 100, completion_tokens: 100, total_tokens: 200 } })}\n\n`),
  encoder.encode('data: [DONE]\n\n'),
]);
let sseTurns: Uint8Array[][] = [];
function useTurns(name: TurnText): void {
  turnsText = TURN_TEXTS[name];
  scriptedTurns = scriptedOf(turnsText);
  sseTurns = sseOf(turnsText);
}
class InProcessOpenAi extends OpenAiCompatibleAdapter {
  protected post(): Promise<Response> {
    const chunks = sseTurns[turnNo % sseTurns.length];
    let k = 0;
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (k < chunks.length) controller.enqueue(chunks[k++]);
        else controller.close();
      },
    });
    return Promise.resolve(new Response(body, { status: 200, headers: { 'content-type': 'text/event-stream' } }));
  }
}
const decoded = new InProcessOpenAi({ baseUrl: 'http://127.0.0.1:9/v1', model: 'm', timeoutMs: 60_000, idleTimeoutMs: 30_000, contextWindow: 32768 });

const ASK = { messages: [{ role: 'user' as const, content: 'Explain it.' }] };
/** The detector off: what LOOP_CONTENT_REPEATS=0 gives a turn. */
const OFF: ContentLoopSettings = { ...DEFAULT_CONTENT_LOOP, repeats: 0 };
async function turn(llm: LlmAdapter, withDetector: boolean): Promise<number> {
  turnNo++;
  // ModelStream runs the detector on what it streams (and releases it when the response is over)
  const stream = new ModelStream(llm, ASK, new AbortController().signal, { contentLoop: withDetector ? DEFAULT_CONTENT_LOOP : OFF });
  const step = stream.step();
  let chars = 0;
  let r = await step.next();
  for (; !r.done; r = await step.next()) chars += r.value.content.length;
  if (r.value.loop) throw new Error('a legitimate answer fired the detector');
  return chars;
}
async function turnsCpu(llm: LlmAdapter, withDetector: boolean): Promise<number> {
  const c0 = process.cpuUsage();
  for (let i = 0; i < TURNS; i++) await turn(llm, withDetector);
  const c = process.cpuUsage(c0);
  return (c.user + c.system) / TURNS;
}
/**
 * Rounds alternate without and with (the order swapped every round); the CPU per turn is each
 * side's least over the rounds, the added share the median of the rounds' own ratios (a round's
 * two halves ran under the same load).
 */
async function pathCost(llm: LlmAdapter): Promise<{ without: number; with: number; added: number }> {
  await turnsCpu(llm, false);
  await turnsCpu(llm, true);
  let without = Infinity;
  let withD = Infinity;
  const ratios: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    let a: number;
    let b: number;
    if (r % 2) {
      a = await turnsCpu(llm, true);
      b = await turnsCpu(llm, false);
    } else {
      b = await turnsCpu(llm, false);
      a = await turnsCpu(llm, true);
    }
    withD = Math.min(withD, a);
    without = Math.min(without, b);
    ratios.push(a / b);
  }
  ratios.sort((x, y) => x - y);
  return { without, with: withD, added: (ratios[Math.floor(ratios.length / 2)] - 1) * 100 };
}

/**
 * (c) The whole service in one process, two-stage turns of the scripted model (2 tool cycles, 240
 * text deltas): CPU per turn with the detector on and off, turn by turn, on one instance. The
 * switch is the settings object OrchestrationService hands every turn (what LOOP_CONTENT_REPEATS
 * sets at start-up), swapped between rounds: the same process, database and warm JIT on both sides.
 */
async function serviceCost(): Promise<{ without: number; with: number; added: number; deltas: number }> {
  const { app, turn: serviceTurn } = await serviceInProcess();
  try {
    const orchestration = app.get(OrchestrationService, { strict: false }) as unknown as { loopSettings?: ContentLoopSettings };
    // turns alternate on and off one by one, each timed alone: drift (the database growing, the
    // load of a shared machine) falls on both sides alike; a round's ratio is its two means'
    const oneTurn = async (on: boolean) => {
      orchestration.loopSettings = on ? DEFAULT_CONTENT_LOOP : OFF;
      const c0 = process.cpuUsage();
      await serviceTurn();
      const c = process.cpuUsage(c0);
      return c.user + c.system;
    };
    for (let i = 0; i < 20; i++) await oneTurn(i % 2 === 0);
    let without = Infinity;
    let withD = Infinity;
    const ratios: number[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      let on = 0;
      let off = 0;
      for (let i = 0; i < SERVICE_TURNS; i++) {
        // the order within a pair swaps every pair
        const first = (i + r) % 2 === 0;
        const x = await oneTurn(first);
        const y = await oneTurn(!first);
        on += first ? x : y;
        off += first ? y : x;
      }
      withD = Math.min(withD, on / SERVICE_TURNS);
      without = Math.min(without, off / SERVICE_TURNS);
      ratios.push(on / off);
    }
    ratios.sort((p, q) => p - q);
    return { without, with: withD, added: (ratios[Math.floor(ratios.length / 2)] - 1) * 100, deltas: TEXT_DELTAS };
  } finally {
    await app.close();
  }
}

async function main() {
  const t0 = performance.now();
  const added = (p: { added: number }) => p.added;
  const paths: Array<{ text: TurnText; path: 'scripted' | 'sse'; without: number; with: number; added: number; chars: number }> = [];
  for (const text of ['typical', 'repetitive'] as const) {
    useTurns(text);
    paths.push({ text, path: 'scripted', chars: charsPerTurn(turnsText), ...(await pathCost(scripted)) });
    paths.push({ text, path: 'sse', chars: charsPerTurn(turnsText), ...(await pathCost(decoded)) });
  }
  console.log(`\nA turn's streaming path, ${DELTAS_PER_TURN} deltas per turn, ${TURNS} turns per round, ${ROUNDS} rounds (CPU: least; added: median of the rounds' ratios):`);
  const pathName = { scripted: '(a) scripted adapter → ModelStream', sse: '(b) SSE bytes → OpenAI-compatible adapter → ModelStream' };
  for (const p of paths) {
    // (a) is the least the path can cost, no decoding: a reference, not a turn's streaming path
    const verdict = p.path === 'scripted' ? 'reference: no decoding, no service' : `goal ≤ 5 %: ${added(p) <= 5 ? 'met' : 'NOT met'}`;
    console.log(`  ${p.text} answers (${p.chars.toFixed(0)} chars), ${pathName[p.path]}: ${p.without.toFixed(1)} µs CPU/turn, with the detector ${p.with.toFixed(1)} µs (+${added(p).toFixed(1)} %, ${verdict})`);
  }
  const service = await serviceCost();
  console.log(
    `  (c) the whole service, one process (${process.env.DATABASE_URL ? 'PostgreSQL' : 'PGlite in memory'}), two-stage turn with ${service.deltas} text deltas: ` +
      `${(service.without / 1000).toFixed(2)} ms CPU/turn, with the detector ${(service.with / 1000).toFixed(2)} ms (${service.added >= 0 ? '+' : ''}${service.added.toFixed(2)} %, goal ≤ 5 %: ${service.added <= 5 ? 'met' : 'NOT met'})`,
  );
  console.log(`(${((performance.now() - t0) / 1000).toFixed(0)} s)`);

  const report = new BenchReport(
    'loops',
    'The content-loop detector over the loop corpus (test/fixtures/loops), streamed in deltas of 3 to 12 characters with the default settings: ' +
      'per kind, loops caught, false positives on legitimate samples, and what reached the client before it fired (repeated characters after ' +
      'the first copy, copies). Its CPU per streamed character against the floor, a bare loop reading the same deltas. What it adds to a ' +
      "turn's streaming path at 100 deltas per turn: ModelStream fed (a) by a scripted in-process adapter, (b) by the OpenAI-compatible " +
      'adapter decoding the same answer from SSE bytes, with and without the detector on each delta, for typical answers (prose) and for ' +
      'the repetitive legitimate corpus. Goal: at most 5 % added.',
    {
      repeats: DEFAULT_CONTENT_LOOP.repeats,
      minSpan: DEFAULT_CONTENT_LOOP.minSpan,
      codeRepeats: DEFAULT_CONTENT_LOOP.codeRepeats,
      codeMinSpan: DEFAULT_CONTENT_LOOP.codeMinSpan,
      maxPeriod: DEFAULT_CONTENT_LOOP.maxPeriod,
      deltaChars: '3-12',
      samples: samples.length,
      deltasPerTurn: DELTAS_PER_TURN,
      turnsPerRound: TURNS,
      rounds: ROUNDS,
      statistic: `CPU: least of ${ROUNDS} alternating rounds; added: median of the rounds' ratios`,
    },
  );
  report
    .add('loops.caught', 'looping samples caught', caught, '')
    .add('loops.samples', 'looping samples', loops.length, '')
    .add('loops.detection.pct', 'detection rate', (caught / loops.length) * 100, '%')
    .add('legit.false-positives', 'false positives on legitimate samples', falsePositives, '')
    .add('legit.samples', 'legitimate samples', legit.length, '')
    .add('issue.copies', 'the 48-character sentence repeated 150 times: copies streamed', shownCopies(issueCase), '')
    .add('issue.copies-written', 'the 48-character sentence repeated 150 times: copies the model wrote before it was stopped (held back, dropped)', issueCase.repeats, '')
    .add('issue.repeated-chars', 'the 48-character sentence repeated 150 times: repeated characters streamed', issueCase.shownEnd - issueCase.atChar - issueCase.period, '')
    .add('cpu.legit.ns-per-char', 'detector CPU per character, legitimate samples (ns)', legitCost.detectorNs, '', { floor: legitCost.floorNs })
    .add('cpu.loops.ns-per-char', 'detector CPU per character, looping samples up to the stop (ns)', loopCost.detectorNs, '', { floor: loopCost.floorNs })
    .table(
      'turns',
      "A turn's streaming path at 100 deltas per turn: CPU per turn without and with the detector",
      ['answers', 'path', 'chars per turn', 'CPU without µs', 'CPU with µs', 'added (median of rounds) %'],
      paths.map((p) => [p.text, pathName[p.path], p.chars.toFixed(0), p.without.toFixed(1), p.with.toFixed(1), `${added(p).toFixed(1)} %`]),
      2,
    )
    .add('service.cpu.off.ms', '(c) whole service, two-stage turn: CPU per turn, detector off (ms)', service.without / 1000, 'ms')
    .add('service.cpu.on.ms', '(c) whole service, two-stage turn: CPU per turn, detector on (ms)', service.with / 1000, 'ms', { floor: service.without / 1000 })
    .add('service.added.pct', "(c) whole service: the detector's added CPU per turn (median of rounds; goal ≤ 5 %)", service.added, '%')
    .table('sweep', 'Each setting moved alone, the others at their defaults', ['setting', 'value', 'default', 'false positives', 'loops caught', 'most copies of a prose sentence of 12+ chars'], sweepRows, 2)
    .table('kinds', 'Per kind of sample', ['sample', 'kind', 'samples', 'caught', 'false positives', 'repeated chars reached the client, mean / max', 'copies, max'], kindRows, 2)
    .write();
}

void main();
