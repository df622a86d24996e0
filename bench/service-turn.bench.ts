/**
 * npm run bench:protocol (second part; needs `nest build`)
 *
 * CPU per two-cycle turn through the whole service in one process: HTTP request, validation,
 * conversation and run rows, the two-stage generator, the real file tools on a temporary
 * workspace, events stored in run_events before they are sent, SSE through Nest's @Sse, the
 * assistant message and the trace. The model is the protocol benchmark's scripted model (same
 * 3 responses, 240 text deltas, no delays), put in place of LLM_ADAPTER. The client reads the
 * raw stream without parsing it. Compared with the same turn through the bare generator (its
 * floor here): how much the service around the protocol costs.
 *
 * Embedded PGlite in memory unless DATABASE_URL is set.
 */
import { randomUUID } from 'node:crypto';
import { ScriptedAdapter, TEXT_DELTAS } from './support/scripted-model';
import { serviceInProcess } from './support/service-in-process';
import { BenchReport } from './report';

// runtime from dist (Nest's DI needs the decorator metadata tsc emits), types from src
/* eslint-disable @typescript-eslint/no-require-imports */
const { TwoStageStrategy } = require('../dist/orchestration/protocols/two-stage/two-stage.strategy') as typeof import('../src/orchestration/protocols/two-stage/two-stage.strategy');
const { OrchestrationService } = require('../dist/orchestration/orchestration.service') as typeof import('../src/orchestration/orchestration.service');
const { RunExecutorService } = require('../dist/runs/run-executor.service') as typeof import('../src/runs/run-executor.service');
const { RunControlService } = require('../dist/runs/run-control.service') as typeof import('../src/runs/run-control.service');
const { AppConfigService } = require('../dist/config/app-config.service') as typeof import('../src/config/app-config.service');
const { TRACE_SINK } = require('../dist/trace/trace-sink.port') as typeof import('../src/trace/trace-sink.port');

const TURNS = Number(process.env.BENCH_SERVICE_TURNS ?? 200);
const WARMUP = 30;
const ROUNDS = Number(process.env.BENCH_SERVICE_ROUNDS ?? 5);

/** CPU (user + system) and wall time per call of `fn`, after a warm-up. */
async function cpuPer(fn: () => Promise<unknown>, n: number): Promise<{ cpuMs: number; wallMs: number }> {
  for (let i = 0; i < WARMUP; i++) await fn();
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  for (let i = 0; i < n; i++) await fn();
  const c = process.cpuUsage(c0);
  return { cpuMs: (c.user + c.system) / 1000 / n, wallMs: (performance.now() - t0) / n };
}

async function main() {
  const { app, turn } = await serviceInProcess();
  try {
    const bytes = await turn();
    const service = await cpuPer(turn, TURNS);

    // the floor: the same turn through the bare generator, in-memory tools, nothing stored or sent
    const strategy = new TwoStageStrategy();
    const tools = {
      run: async (call: { name: string; arguments: unknown }) => ({ toolName: call.name, args: {}, outcome: 'success' as const, output: {}, outputText: '{}', truncated: false, isError: false, latencyMs: 0, sources: [], signature: null }),
      signature: (call: { name: string; arguments: unknown }) => `${call.name}:${String(call.arguments)}`,
      specs: async () => [
        { name: 'list_files', description: 'list', parameters: { type: 'object' } },
        { name: 'read_file', description: 'read', parameters: { type: 'object' } },
      ],
      redactArgs: (_n: string, a: unknown) => a,
    };
    const bare = async () => {
      for await (const _ of strategy.execute({
        requestId: 'r', projectId: 'p', conversationId: 'c', messages: [{ role: 'user', content: 'Summarize docs/roadmap.md' }], mode: 'act',
        llm: new ScriptedAdapter(), tools, trace: { record() {}, flush: async () => undefined },
        budgets: { maxPhaseCycles: 3, maxDuplicateAttempts: 3, maxIterations: 10 }, debugShowToolResults: false,
        signal: new AbortController().signal, control: { pauseRequested: () => false },
      })) void _;
    };
    const floor = await cpuPer(bare, TURNS * 10);

    // the service without HTTP or a database: the run engine (envelope, safety, JSON once, the
    // SSE text of each event) around the same generator with the real tool runner (file tools on
    // the workspace) and the real trace writer (masking, queueing, batching) whose rows go nowhere;
    // run rows, run_events and the answer are no-ops too
    const orchestration = app.get(OrchestrationService, { strict: false });
    const noop = async () => undefined;
    const executor = new RunExecutorService(
      { insertAssistantOnce: async () => ({ message: { id: randomUUID() } }) } as never,
      { renewLease: async () => ({ control: null }), saveCheckpoint: async () => true, finish: noop } as never,
      { append: noop, enqueue: noop } as never,
      { publish() {}, end() {} } as never,
      {} as never, // the stored-events reader: read only by a run that lost its lease, which a bench run never does
      app.get(RunControlService, { strict: false }),
      app.get(AppConfigService, { strict: false }),
      app.get(TRACE_SINK, { strict: false }),
    );
    // the app's trace writer (the executor's and the tool runner's) keeps its work but stores
    // nothing from here on: this row has no database
    (app.get(TRACE_SINK, { strict: false }) as unknown as { repo: unknown }).repo = { insertMany: noop };
    let sseChars = 0;
    const engine = async () => {
      const requestId = randomUUID();
      const turn = orchestration.buildTurn({
        protocol: 'two-stage', requestId, projectId: 'default', conversationId: randomUUID(), mode: 'act',
        messages: [{ role: 'user', content: 'Summarize docs/roadmap.md' }], budgets: orchestration.budgets(), debugShowToolResults: false,
      });
      await executor.execute({
        requestId, projectId: 'default', conversationId: 'c', turn, detach: false, lastSeq: 0, priorContent: '',
        opening: [{ type: 'start', protocol: 'two-stage', userMessageId: null }],
        client: { deliver: async (events) => void (sseChars += events.map((e) => `event: ${e.type}\nid: ${e.seq}\ndata: ${e.json ?? JSON.stringify(e.data)}\n\n`).join('').length) },
      });
    };
    // floor and engine measured in alternating rounds: on a shared machine either one alone
    // drifts by 2× between runs, their ratio within a round much less; the median round is shown
    const rounds: Array<{ engine: number; floor: number }> = [];
    for (let r = 0; r < ROUNDS; r++) rounds.push({ floor: (await cpuPer(bare, TURNS * 5)).cpuMs, engine: (await cpuPer(engine, TURNS)).cpuMs });
    const byRatio = [...rounds].sort((a, b) => a.engine / a.floor - b.engine / b.floor);
    const mid = byRatio[Math.floor(byRatio.length / 2)];
    const engineCpu = { cpuMs: mid.engine };

    console.log(`\nwhole service, one process (${process.env.DATABASE_URL ? 'PostgreSQL' : 'PGlite in memory'}): two-stage turn, 2 tool cycles, ${TEXT_DELTAS} text deltas, ${bytes} bytes of SSE, ${TURNS} turns`);
    console.log(`  CPU per turn: ${service.cpuMs.toFixed(2)} ms (wall ${service.wallMs.toFixed(2)} ms)`);
    console.log(`  bare generator: ${floor.cpuMs.toFixed(3)} ms CPU per turn -> the service around it costs ${(service.cpuMs / floor.cpuMs).toFixed(0)}× the protocol`);
    const ratio = mid.engine / mid.floor;
    const ratios = byRatio.map((x) => (x.engine / x.floor).toFixed(1)).join(', ');
    console.log(
      `  service level, no HTTP or database (run engine, real tool runner and trace writer): ${engineCpu.cpuMs.toFixed(3)} ms CPU per turn ` +
        `vs ${mid.floor.toFixed(3)} ms for the bare generator in the same round, ${Math.round(sseChars / ((TURNS + WARMUP) * ROUNDS))} chars of SSE -> ` +
        `${ratio.toFixed(1)}× (median of ${ROUNDS} rounds: ${ratios}) (issue 17 goal ≤ 8×: ${ratio <= 8 ? 'met' : 'NOT met'})`,
    );
    new BenchReport(
      'service-turn',
      'CPU per two-cycle turn through the whole service in one process (HTTP, validation, rows, the two-stage generator, real file tools, ' +
        'stored events, SSE, trace), and the run engine without HTTP or a database; the floor is the same turn through the bare generator.',
      { turns: TURNS, warmup: WARMUP, rounds: ROUNDS, textDeltas: TEXT_DELTAS, database: process.env.DATABASE_URL ? 'PostgreSQL' : 'PGlite in memory' },
    )
      .add('sse.bytes', 'SSE bytes per turn', bytes, 'B')
      .add('service.cpu.ms', 'whole service: CPU per turn', service.cpuMs, 'ms', { floor: floor.cpuMs })
      .add('service.wall.ms', 'whole service: wall time per turn', service.wallMs, 'ms')
      .add('engine.cpu.ms', `run engine, no HTTP or database: CPU per turn (median round of ${ROUNDS}; goal ≤ 8× the floor)`, mid.engine, 'ms', { floor: mid.floor, ratio })
      .add('engine.sse.chars', 'run engine: chars of SSE per turn', Math.round(sseChars / ((TURNS + WARMUP) * ROUNDS)), '')
      .add('engine.ratio.min', `run engine: lowest ratio to the floor of the ${ROUNDS} rounds`, byRatio[0].engine / byRatio[0].floor, '×')
      .add('engine.ratio.max', `run engine: highest ratio to the floor of the ${ROUNDS} rounds`, byRatio[byRatio.length - 1].engine / byRatio[byRatio.length - 1].floor, '×')
      .write();
  } finally {
    await app.close();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
