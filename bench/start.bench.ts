/**
 * npm run bench:start  [-- --runs 5] [-- --no-cold]
 *
 * How long `npm start` takes until GET /api/health answers 200, on the embedded defaults
 * (PGlite in a fresh DATA_DIR, replay model):
 *   - cold: the first start of a checkout: `nest build` (the build stamp is removed first) and
 *     the database initialised in a new DATA_DIR;
 *   - warm: a restart with nothing changed (no build, existing DATA_DIR), median of `--runs`;
 *   - floor: the least code doing the same job, a plain Node process that opens the same PGlite
 *     data directory and answers /api/health with `SELECT 1`, median of `--runs`.
 * Prints seconds and the warm / floor ratio. Target: warm under 3 s.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BenchReport } from './report';

const ROOT = join(__dirname, '..');
const RUNS = Number(process.argv[process.argv.indexOf('--runs') + 1]) || 5;
const COLD = !process.argv.includes('--no-cold');

const FLOOR = `
const { PGlite } = require('@electric-sql/pglite');
const { vector } = require('@electric-sql/pglite-pgvector');
const http = require('node:http');
PGlite.create({ dataDir: require('node:path').join(process.env.DATA_DIR, 'pglite'), extensions: { vector } }).then((db) =>
  http.createServer(async (req, res) => {
    await db.query('SELECT 1');
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ status: 'ok' }));
  }).listen(Number(process.env.PORT), '127.0.0.1'));
`;

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

/** Starts `cmd`, polls /api/health every 20 ms, stops the process group; seconds until healthy. */
async function timeToHealthy(cmd: string, args: string[], env: Record<string, string>): Promise<number> {
  const port = await freePort();
  const started = performance.now();
  const child = spawn(cmd, args, { cwd: ROOT, env: { ...process.env, ...env, PORT: String(port) }, detached: true, stdio: 'ignore' });
  let exited = false;
  child.on('exit', () => (exited = true));
  try {
    for (;;) {
      if (exited) throw new Error(`${cmd} ${args.join(' ')} exited before it was healthy`);
      try {
        if ((await fetch(`http://127.0.0.1:${port}/api/health`)).ok) return (performance.now() - started) / 1000;
      } catch {
        // not listening yet
      }
      await new Promise((r) => setTimeout(r, 20));
    }
  } finally {
    if (!exited) {
      process.kill(-child.pid!, 'SIGTERM');
      await new Promise((r) => child.once('exit', r));
    }
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function main(): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'orion-bench-start-'));
  const env = { DATA_DIR: dataDir, WORKSPACE_ROOT: join(dataDir, 'workspace'), LLM_PROVIDER: 'replay', MCP_CONFIG: '', LOG_LEVEL: 'error', DATABASE_URL: '' };
  let cold: number | null = null;
  try {
    if (COLD) {
      rmSync(join(ROOT, 'dist', '.build-stamp'), { force: true });
      cold = await timeToHealthy('npm', ['start'], env);
      console.log(`cold  (build + new database): ${cold.toFixed(2)} s`);
    } else {
      // the warm runs need a build and an initialised database; not timed
      await timeToHealthy('npm', ['start'], env);
    }
    const warm: number[] = [];
    const floor: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      warm.push(await timeToHealthy('npm', ['start'], env));
      floor.push(await timeToHealthy(process.execPath, ['-e', FLOOR], env));
    }
    const w = median(warm);
    const f = median(floor);
    console.log(`warm  (npm start, nothing changed): median ${w.toFixed(2)} s of ${warm.map((x) => x.toFixed(2)).join(', ')}`);
    console.log(`floor (node + PGlite + http):       median ${f.toFixed(2)} s of ${floor.map((x) => x.toFixed(2)).join(', ')}`);
    console.log(`warm / floor: ${(w / f).toFixed(2)}x · target warm < 3 s: ${w < 3 ? 'met' : 'NOT met'}`);
    const report = new BenchReport(
      'start',
      'Seconds from `npm start` until GET /api/health answers 200 on the embedded defaults (PGlite, replay model): cold (build + new ' +
        'database) and warm (nothing changed). Floor: a plain Node process opening the same PGlite directory and answering with SELECT 1.',
      { runs: RUNS, cold: COLD, statistic: 'median' },
    );
    if (cold !== null) report.add('cold.s', 'cold start (build + new database)', cold, 's');
    report.add('warm.s', 'warm start (npm start, nothing changed), median (target < 3 s)', w, 's', { floor: f });
    report.add('warm.min.s', 'warm start, fastest run', Math.min(...warm), 's').add('warm.max.s', 'warm start, slowest run', Math.max(...warm), 's');
    report.add('floor.min.s', 'floor, fastest run', Math.min(...floor), 's').add('floor.max.s', 'floor, slowest run', Math.max(...floor), 's');
    report.write();
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
