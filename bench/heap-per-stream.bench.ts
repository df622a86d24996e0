/**
 * tsx bench/heap-per-stream.bench.ts [-- --n 300 --route unified|two-stage --top 30 --keep]
 *
 * What one open stream holds while it waits for model deltas (issue 35, item 5). The built
 * service (`node dist/main.js`, run `nest build` first) on PostgreSQL (a scratch database on
 * DATABASE_URL's server; embedded PGlite without it) with `bench/load`'s fake model slowed to one
 * delta every 300 ms, so every stream is open and waiting when the snapshot is taken. Two heap
 * snapshots (`--heapsnapshot-signal`): idle after two warm-up turns, then with N turns open, each
 * past its tool call and into the model's second answer. Prints the process's memory readings
 * (RSS, V8 heap used, external, array buffers; prom-client's default metrics) idle and loaded,
 * per stream, and the classes whose retained size grew most, per stream (bench/load/heap-snapshot.ts).
 * The snapshots are deleted unless `--keep` (then their paths are printed; they open in Chrome
 * DevTools' Memory panel).
 */
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { request, Agent } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SseReader } from '../test/support/sse-reader';
import { readHeap, type ClassSizes } from './load/heap-snapshot';
import { forkHelper, makeWorkspace, startOrion } from './load/processes';
import { rssBytes } from './load/proc';
import { scratchDatabase } from './load/scratch-db';

const arg = (name: string, dflt: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : dflt;
};
const N = Number(arg('n', '300'));
const ROUTE = arg('route', 'unified');
const TOP = Number(arg('top', '30'));
const KEEP = process.argv.includes('--keep');
const PATHS: Record<string, string> = { unified: '/api/chat/messages', 'two-stage': '/api/chat/messages_two_stage' };
if (!(N > 0) || !PATHS[ROUTE]) {
  console.error('usage: --n 300 --route unified|two-stage [--top 30] [--keep]');
  process.exit(2);
}
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Memory readings from prom-client's default metrics on /metrics. */
async function memory(port: number, pid: number) {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const m = (name: string) => Number(new RegExp(`^${name.replace(/[{}]/g, '\\$&')} (\\S+)$`, 'm').exec(text)?.[1]);
  return {
    rss: rssBytes(pid),
    heapUsed: m('nodejs_heap_size_used_bytes'),
    heapTotal: m('nodejs_heap_size_total_bytes'),
    newSpace: m('nodejs_heap_space_size_total_bytes{space="new"}'),
    oldSpaceUsed: m('nodejs_heap_space_size_used_bytes{space="old"}'),
    oldSpace: m('nodejs_heap_space_size_total_bytes{space="old"}'),
    external: m('nodejs_external_memory_bytes'),
  };
}

/** Sends SIGUSR2 and waits until the new snapshot file in `dir` is whole (the service answers again, the file stops growing). */
async function snapshot(pid: number, port: number, dir: string): Promise<string> {
  const before = new Set(readdirSync(dir));
  process.kill(pid, 'SIGUSR2');
  for (;;) {
    await sleep(500);
    const file = readdirSync(dir).find((f) => f.endsWith('.heapsnapshot') && !before.has(f));
    if (!file) continue;
    const size = statSync(join(dir, file)).size;
    // answers once the snapshot is written (it blocks the event loop); a kept-alive connection the service dropped meanwhile is only retried
    await fetch(`http://127.0.0.1:${port}/api/health/live`).catch(() => undefined);
    await sleep(500);
    if (statSync(join(dir, file)).size === size) return join(dir, file);
  }
}

/** N turns; resolves once each has received a chunk after its tool call, with a handle to wait for their ends. */
function openTurns(port: number, path: string, n: number): { waiting: Promise<void>; ended: Promise<number> } {
  const agent = new Agent({ keepAlive: false, maxSockets: Infinity });
  let waitingCount = 0;
  let errors = 0;
  let markWaiting!: () => void;
  const waiting = new Promise<void>((r) => (markWaiting = r));
  const ends: Promise<void>[] = [];
  for (let i = 0; i < n; i++)
    ends.push(
      new Promise<void>((resolve) => {
        const sse = new SseReader();
        let afterTool = false;
        let counted = false;
        const count = () => {
          if (counted) return;
          counted = true;
          if (++waitingCount === n) markWaiting();
        };
        const req = request({ host: '127.0.0.1', port, path, method: 'POST', agent, headers: { 'content-type': 'application/json', accept: 'text/event-stream' } }, (res) => {
          res.on('data', (c: Buffer) => {
            for (const f of sse.push(c)) {
              if (f.event === 'tool_calls') afterTool = true;
              else if (f.event === 'chunk' && afterTool) count();
              else if (f.event === 'error') errors++;
            }
          });
          res.on('end', () => (count(), resolve()));
          res.on('error', () => (errors++, count(), resolve()));
        });
        req.on('error', () => (errors++, count(), resolve()));
        req.end(JSON.stringify({ content: `heap turn ${i}` }));
      }),
    );
  return { waiting, ended: Promise.all(ends).then(() => (agent.destroy(), errors)) };
}

const kb = (b: number) => (b / 1024).toFixed(1);

async function main() {
  const url = process.env.DATABASE_URL;
  const model = await forkHelper(join(__dirname, 'load', 'fake-model.ts'), { FAKE_MODEL_GAP_MS: '300' });
  const workspace = makeWorkspace();
  const dir = mkdtempSync(join(tmpdir(), 'orion-heap-'));
  const scratch = url ? await scratchDatabase(url) : undefined;
  process.env.ORION_NODE_ARGS = `--heapsnapshot-signal=SIGUSR2 --diagnostic-dir=${dir}`;
  const orion = await startOrion(join(__dirname, '..', 'dist', 'main.js'), {
    LLM_PROVIDER: 'openai',
    LLM_BASE_URL: `http://127.0.0.1:${model.port}/v1`,
    LLM_MODEL: 'fake',
    LLM_API_KEY: 'bench-key',
    TWO_STAGE_ENABLED: 'true',
    WORKSPACE_ROOT: workspace,
    MAX_CONCURRENT_TURNS: '100000',
    ...(scratch ? { DATABASE_URL: scratch.url } : {}),
  });
  try {
    console.log(`heap per stream: N = ${N}, ${ROUTE}, ${scratch ? 'PostgreSQL' : 'PGlite'}`);
    const warm = openTurns(orion.port, PATHS[ROUTE], 2);
    await warm.ended;
    // read before the snapshot: writing one grows RSS by about the snapshot's size
    const idleMem = await memory(orion.port, orion.pid);
    const idleFile = await snapshot(orion.pid, orion.port, dir);
    const turns = openTurns(orion.port, PATHS[ROUTE], N);
    await turns.waiting;
    const loadMem = await memory(orion.port, orion.pid);
    const loadFile = await snapshot(orion.pid, orion.port, dir);
    const afterMem = await memory(orion.port, orion.pid);
    const errors = await turns.ended;
    console.log(`errors: ${errors}`);
    console.log('| reading | idle MB | loaded MB | KB per stream |\n|---|---:|---:|---:|');
    for (const k of ['rss', 'heapUsed', 'heapTotal', 'newSpace', 'oldSpaceUsed', 'oldSpace', 'external'] as const)
      console.log(`| ${k} | ${(idleMem[k] / 1048576).toFixed(1)} | ${(loadMem[k] / 1048576).toFixed(1)} | ${kb((loadMem[k] - idleMem[k]) / N)} |`);
    console.log(`| heapUsed after the snapshot's full GC | | ${(afterMem.heapUsed / 1048576).toFixed(1)} | ${kb((afterMem.heapUsed - idleMem.heapUsed) / N)} |`);
    // writing the idle snapshot leaves its buffers allocated: the loaded RSS includes them
    console.log('(loaded RSS includes what writing the idle snapshot left allocated: RSS per stream is bench:load\'s column)');
    const idleHeap = readHeap(idleFile);
    const loadHeap = readHeap(loadFile);
    const [idle, load] = [idleHeap.classes, loadHeap.classes];
    const total = (m: Map<string, ClassSizes>) => [...m.values()].reduce((a, c) => a + c.self, 0);
    console.log(`\nlive heap (snapshot): idle ${(total(idle) / 1048576).toFixed(1)} MB, loaded ${(total(load) / 1048576).toFixed(1)} MB, ${kb((total(load) - total(idle)) / N)} KB per stream\n`);
    const zero = { count: 0, self: 0, retained: 0 };
    const rows = [...load.entries()].map(([k, c]) => {
      const i = idle.get(k) ?? zero;
      return { k, count: (c.count - i.count) / N, self: (c.self - i.self) / N, retained: (c.retained - i.retained) / N };
    });
    console.log('| owner (bench/load/heap-snapshot.ts: owners) | KB per stream |\n|---|---:|');
    const owned = [...loadHeap.owners.entries()].map(([k, v]) => ({ k, kb: (v - (idleHeap.owners.get(k) ?? 0)) / N })).sort((a, b) => b.kb - a.kb);
    for (const o of owned.slice(0, TOP)) console.log(`| ${o.k.replace(/\|/g, '/').slice(0, 80)} | ${kb(o.kb)} |`);
    console.log('\n| class | objects per stream | self KB per stream | retained KB per stream |\n|---|---:|---:|---:|');
    for (const r of rows.sort((a, b) => b.retained - a.retained).slice(0, TOP)) console.log(`| ${r.k.replace(/\|/g, '/').slice(0, 80)} | ${r.count.toFixed(1)} | ${kb(r.self)} | ${kb(r.retained)} |`);
    console.log('\nby self size:\n| class | objects per stream | self KB per stream |\n|---|---:|---:|');
    for (const r of rows.sort((a, b) => b.self - a.self).slice(0, TOP)) console.log(`| ${r.k.replace(/\|/g, '/').slice(0, 80)} | ${r.count.toFixed(1)} | ${kb(r.self)} |`);
    if (KEEP) console.log(`\nsnapshots: ${idleFile} ${loadFile}`);
  } finally {
    await orion.stop();
    await model.stop();
    await scratch?.drop();
    rmSync(workspace, { recursive: true, force: true });
    if (!KEEP) rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
