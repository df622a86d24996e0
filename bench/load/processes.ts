/** Starting and stopping the benchmark's processes: the fake model, the floor, Orion. */
import { fork, spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface Proc {
  child: ChildProcess;
  pid: number;
  port: number;
  stop: () => Promise<void>;
}

const stopper = (child: ChildProcess) => () =>
  new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
    setTimeout(() => child.kill('SIGKILL'), 10_000).unref();
  });

/** A TypeScript helper in its own Node process (same loader as this one); it reports its port over IPC. */
export function forkHelper(script: string, env: Record<string, string>): Promise<Proc> {
  const child = fork(script, [], { execArgv: process.execArgv, env: { ...process.env, ...env }, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  return new Promise((resolve, reject) => {
    child.once('message', (m: { port: number }) => resolve({ child, pid: child.pid!, port: m.port, stop: stopper(child) }));
    child.once('exit', (code) => reject(new Error(`${script} exited with ${code}`)));
  });
}

export function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const p = (s.address() as AddressInfo).port;
      s.close(() => resolve(p));
    });
  });
}

/** A workspace with a `default` project holding a few files, for the turn's list_files call. */
export function makeWorkspace(): string {
  const root = mkdtempSync(join(tmpdir(), 'orion-load-ws-'));
  mkdirSync(join(root, 'default', 'docs'), { recursive: true });
  for (const f of ['README.md', 'notes.txt', 'docs/roadmap.md']) writeFileSync(join(root, 'default', f), `# ${f}\n`);
  return root;
}

/**
 * A stopped service's folder goes (an embedded database is ~45 MB a run); what else was written
 * there, e.g. a heap snapshot asked for through ORION_NODE_ARGS, stays with its folder.
 */
function removeRunFolder(cwd: string): void {
  rmSync(join(cwd, 'data'), { recursive: true, force: true });
  try {
    rmdirSync(cwd);
  } catch {
    /* not empty: kept */
  }
}

/** `node dist/main.js` with a fresh data folder; resolves once /api/health answers. */
export async function startOrion(dist: string, env: Record<string, string>): Promise<Proc & { startMs: number }> {
  const port = await freePort();
  const cwd = mkdtempSync(join(tmpdir(), 'orion-load-'));
  const base = { ...process.env };
  delete base.DATABASE_URL;
  const t0 = Date.now();
  // ORION_NODE_ARGS: extra Node flags for the measured service only (e.g. --cpu-prof), which
  // NODE_OPTIONS refuses and would also pass to the bench's own processes.
  const nodeArgs = (process.env.ORION_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const child = spawn(process.execPath, [...nodeArgs, dist], { cwd, env: { ...base, DATA_DIR: join(cwd, 'data'), LOG_LEVEL: 'warn', ...env, PORT: String(port) }, stdio: ['ignore', 'ignore', 'inherit'] });
  for (let i = 0; i < 600; i++) {
    if (child.exitCode !== null) break;
    try {
      if ((await fetch(`http://127.0.0.1:${port}/api/health`)).ok) return { child, pid: child.pid!, port, stop: () => stopper(child)().then(() => removeRunFolder(cwd)), startMs: Date.now() - t0 };
    } catch {
      /* not up yet */
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  await stopper(child)();
  removeRunFolder(cwd);
  throw new Error(`Orion did not start (${JSON.stringify(env.DATABASE_URL ? 'postgres' : 'pglite')})`);
}
