/**
 * npm run bench:pglite-memory
 *
 * Where the embedded database's memory goes at idle (issue 17, deliverable 3, measurement only).
 * Each case runs in a fresh Node process: open PGlite the given way, run one query, collect
 * garbage, wait, then read RSS, the JS heap, external memory and the size of PGlite's WebAssembly
 * memory. Then the whole service, `node dist/main.js` idle — on its first start, on the next, and
 * after 40 turns — on embedded PGlite with each PGLITE_PROFILE and on PostgreSQL (DATABASE_URL;
 * skipped without it).
 */
import { fork } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { rssBytes } from './load/proc';
import { forkHelper, makeWorkspace, startOrion } from './load/processes';
import { BenchReport } from './report';

// `initialMemory` cannot go below 128 MB: the WebAssembly module declares 2,048 pages as its minimum
type Case = { name: string; dataDir: boolean; vector: boolean; params?: string[]; nodeFlags?: string[] };
const CASES: Case[] = [
  { name: 'Node alone (no PGlite)', dataDir: false, vector: false },
  { name: 'PGlite in memory', dataDir: false, vector: false },
  { name: 'PGlite in memory + pgvector', dataDir: false, vector: true },
  { name: 'PGlite data dir + pgvector (Orion default)', dataDir: true, vector: true },
  { name: '… + shared_buffers=16MB', dataDir: true, vector: true, params: ['-c', 'shared_buffers=16MB'] },
  { name: '… + shared_buffers=16MB, work_mem=1MB, temp_buffers=1MB', dataDir: true, vector: true, params: ['-c', 'shared_buffers=16MB', '-c', 'work_mem=1MB', '-c', 'temp_buffers=1MB'] },
  { name: '… + shared_buffers=16MB, WebAssembly by Liftoff only (PGLITE_PROFILE=small)', dataDir: true, vector: true, params: ['-c', 'shared_buffers=16MB'], nodeFlags: ['--liftoff-only'] },
];
/** the size of PGlite's WebAssembly memory, found on its Emscripten module (not a public API) */
function wasmBytes(db: object): number {
  const mod = (db as { mod?: { HEAPU8?: Uint8Array; HEAP8?: Int8Array; wasmMemory?: WebAssembly.Memory } }).mod;
  return mod?.HEAPU8?.byteLength ?? mod?.HEAP8?.byteLength ?? mod?.wasmMemory?.buffer.byteLength ?? 0;
}
const mb = (b: number) => (b / 1048576).toFixed(0);

/** In the child: open one case and report its memory. */
async function child(c: Case): Promise<void> {
  let wasm = 0;
  if (c.name !== CASES[0].name) {
    const { PGlite } = await import('@electric-sql/pglite');
    const { vector } = await import('@electric-sql/pglite-pgvector');
    const defaults = (PGlite as unknown as { defaultStartParams: string[] }).defaultStartParams;
    const db = await PGlite.create({
      ...(c.dataDir ? { dataDir: mkdtempSync(join(tmpdir(), 'orion-pglite-mem-')) } : {}),
      ...(c.vector ? { extensions: { vector } } : {}),
      ...(c.params ? { startParams: [...defaults, ...c.params] } : {}),
    });
    if (c.vector) await db.exec('CREATE EXTENSION IF NOT EXISTS vector');
    await db.query('SELECT 1');
    wasm = wasmBytes(db);
    (globalThis as { keep?: unknown }).keep = db;
  }
  (globalThis as { gc?: () => void }).gc?.();
  await new Promise((r) => setTimeout(r, 1000));
  const m = process.memoryUsage();
  process.send?.({ rss: m.rss, heap: m.heapUsed, external: m.external, wasm });
}

async function main(): Promise<void> {
  const which = process.argv.indexOf('--case');
  if (which > 0) return child(CASES[Number(process.argv[which + 1])]);
  console.log('| case | RSS MB | JS heap MB | external MB (incl. WASM) | WASM memory MB |');
  console.log('|---|---:|---:|---:|---:|');
  const rows: string[][] = [];
  let floorRss = 0;
  for (let i = 0; i < CASES.length; i++) {
    const r = await new Promise<{ rss: number; heap: number; external: number; wasm: number }>((resolve, reject) => {
      const p = fork(__filename, ['--case', String(i)], { execArgv: [...process.execArgv, '--expose-gc', ...(CASES[i].nodeFlags ?? [])] });
      p.once('message', (m) => {
        resolve(m as never);
        p.kill();
      });
      p.once('exit', (code) => code && reject(new Error(`case ${i} exited with ${code}`)));
    });
    console.log(`| ${CASES[i].name} | ${mb(r.rss)} | ${mb(r.heap)} | ${mb(r.external)} | ${r.wasm ? mb(r.wasm) : '–'} |`);
    rows.push([CASES[i].name, mb(r.rss), mb(r.heap), mb(r.external), r.wasm ? mb(r.wasm) : '–']);
    // the floor of the service rows: the database alone, opened as Orion opens it
    if (CASES[i].name.endsWith('(Orion default)')) floorRss = r.rss;
  }
  // the whole service, fresh and idle (a model server only so it starts as configured)
  const services: Array<{ name: string; rss: number }> = [];
  const model = await forkHelper(join(__dirname, 'load', 'fake-model.ts'), {});
  const workspace = makeWorkspace();
  const env = { LLM_PROVIDER: 'openai', LLM_BASE_URL: `http://127.0.0.1:${model.port}/v1`, LLM_MODEL: 'fake', LLM_API_KEY: 'bench-key', WORKSPACE_ROOT: workspace };
  try {
    const configs: Array<[string, Record<string, string> | undefined]> = [
      ['Orion, embedded PGlite, PGLITE_PROFILE=small (default)', { PGLITE_PROFILE: 'small' }],
      ['Orion, embedded PGlite, PGLITE_PROFILE=fast', { PGLITE_PROFILE: 'fast' }],
      ['Orion, PostgreSQL', process.env.DATABASE_URL ? { DATABASE_URL: process.env.DATABASE_URL } : undefined],
    ];
    for (const [name, extra] of configs) {
      if (!extra) continue;
      const dataDir = mkdtempSync(join(tmpdir(), 'orion-pglite-svc-'));
      const run = async (what: string, turns: number) => {
        const o = await startOrion(join(__dirname, '..', 'dist', 'main.js'), { ...env, DATA_DIR: dataDir, ...extra });
        for (let round = 0; round < turns / 10; round++) {
          await Promise.all(Array.from({ length: 10 }, () => fetch(`http://127.0.0.1:${o.port}/api/chat/messages`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ content: 'hello' }) }).then((r) => r.text())));
        }
        await new Promise((r) => setTimeout(r, 3000));
        const rss = rssBytes(o.pid);
        console.log(`| ${name}: ${what}, idle 3 s | ${mb(rss)} | | | |`);
        rows.push([`${name}: ${what}, idle 3 s`, mb(rss), '', '', '']);
        services.push({ name: `${name}: ${what}`, rss });
        await o.stop();
      };
      await run('first start (new database)', 0);
      await run('next start', 0);
      await run('after 40 turns (10 at a time)', 40);
    }
  } finally {
    await model.stop();
    rmSync(workspace, { recursive: true, force: true });
  }
  const report = new BenchReport(
    'pglite-memory',
    "Where the embedded database's memory goes at idle: each case in a fresh Node process (PGlite opened a given way, one query, GC, " +
      'then RSS, JS heap, external and WebAssembly memory), then the whole service idle on each PGLITE_PROFILE and on PostgreSQL. ' +
      'Floor of the service rows: the database alone, opened as Orion opens it (PGlite data dir + pgvector).',
    { idleSeconds: 3, turnsBeforeLastMeasure: 40, postgres: Boolean(process.env.DATABASE_URL) },
  ).table('memory', 'Idle memory per case', ['case', 'RSS MB', 'JS heap MB', 'external MB (incl. WASM)', 'WASM memory MB'], rows);
  const b = 1048576;
  services.forEach((x, i) => report.add(`service.${i + 1}.rss.mb`, `${x.name}: RSS`, x.rss / b, 'MB', { floor: floorRss / b }));
  report.write();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
