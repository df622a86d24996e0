import { execFileSync } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { Client } from 'pg';
import { freePort, startOrion, type Instance } from '../faults/harness';
import { startApp, type TestApp } from './app';

/**
 * Two instances on one PostgreSQL, for the tests where an instance dies: A the built service in a
 * child process (so it can be killed with SIGKILL, which an app in this process cannot be), B an
 * app in this process that takes A's runs over.
 */
const ROOT = join(__dirname, '..', '..');
const DIST = join(ROOT, 'dist', 'main.js');

export interface TwoInstances {
  a: Instance;
  b: TestApp;
  /** a direct connection, to read what was stored */
  pg: Client;
}

/** A runs the built service: builds it when the sources changed since the last build. */
export function buildService(): void {
  execFileSync(process.execPath, [join(ROOT, 'scripts', 'build-if-stale.mjs')], { cwd: ROOT, stdio: 'ignore', timeout: 600_000 });
}

/** Starts A, the built service in a child process, on `port` (a free one when absent). */
export async function startA(env: Record<string, string>, port?: number): Promise<Instance> {
  return startOrion(DIST, port ?? (await freePort()), env);
}

/** Starts A and B with the same environment, and connects to their database. */
export async function startTwoInstances(env: Record<string, string>, databaseUrl: string): Promise<TwoInstances> {
  const a = await startA(env);
  let b: TestApp | undefined;
  try {
    b = await startApp(env, { databaseUrl });
    const pg = new Client({ connectionString: databaseUrl });
    await pg.connect();
    return { a, b, pg };
  } catch (e) {
    // the caller's afterAll never sees a half-started pair: end it here
    await stopTwoInstances({ a, b });
    throw e;
  }
}

/** A new A on the same port when the previous case killed it (else A itself). */
export async function reviveA(a: Instance, env: Record<string, string>): Promise<Instance> {
  if (a.child.exitCode === null && a.child.signalCode === null) return a;
  return startA(env, a.port);
}

/** Kills A with SIGKILL and waits until it is gone. */
export async function killA(a: Instance): Promise<void> {
  a.child.kill('SIGKILL');
  await once(a.child, 'exit').catch(() => undefined);
}

/** Ends what startTwoInstances started (any part of it that did start). */
export async function stopTwoInstances(two: Partial<TwoInstances>): Promise<void> {
  two.a?.child.kill('SIGKILL');
  await two.b?.close();
  await two.pg?.end();
}
