import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { setFlagsFromString } from 'node:v8';
import { PGlite } from '@electric-sql/pglite';
import { createPgConfig } from '@electric-sql/pglite/node-postgres';
import { vector } from '@electric-sql/pglite-pgvector';
import type { DataSourceOptions } from 'typeorm';
import { CountingLogger } from './counting-logger';
import { MIGRATIONS } from './migrations';

export type DatabaseKind = 'pglite' | 'postgres';

/** A database to open: where it is, and the PGlite instance behind it when embedded. */
export interface DatabaseTarget {
  kind: DatabaseKind;
  /** shown in health and logs; never contains a password */
  description: string;
  options: DataSourceOptions;
  pglite?: PGlite;
}

/**
 * Test hook: a PGlite data-dir tarball (made by test/support/global-setup.ts after running the
 * migrations) that in-memory databases start from, so each test file opens in about a second
 * instead of running initdb in WASM.
 */
const TEMPLATE_ENV = 'ORION_PGLITE_TEMPLATE';

/** Opens PGlite (embedded or in memory) or describes a PostgreSQL connection. */
export async function openDatabase(databaseUrl: string | undefined, dataDir: string, opts: { profile?: 'small' | 'fast'; preparedStatements?: boolean } = {}): Promise<DatabaseTarget> {
  const common = {
    type: 'postgres' as const,
    migrations: MIGRATIONS,
    migrationsRun: true,
    synchronize: false,
    autoLoadEntities: true,
    uuidExtension: 'pgcrypto' as const,
    installExtensions: false,
    logging: ['error' as const],
    logger: new CountingLogger(['error']),
  };
  if (databaseUrl && /^postgres(ql)?:\/\//.test(databaseUrl)) {
    return {
      kind: 'postgres',
      description: `postgres://${new URL(databaseUrl).host}${new URL(databaseUrl).pathname}`,
      options: { ...common, url: databaseUrl, poolSize: 10, extra: { preparedStatements: opts.preparedStatements !== false } } as unknown as DataSourceOptions,
    };
  }
  const inMemory = databaseUrl === 'memory://';
  const tuning = pgliteTuning(opts.profile ?? 'small');
  let pglite: PGlite;
  if (inMemory) {
    const template = process.env[TEMPLATE_ENV];
    pglite = await PGlite.create({
      extensions: { vector },
      ...tuning,
      ...(template ? { loadDataDir: new Blob([readFileSync(template)]) } : {}),
    });
  } else {
    const dir = resolve(dataDir, 'pglite');
    mkdirSync(dir, { recursive: true });
    claimDataDir(dir);
    if (!existsSync(join(dir, 'PG_VERSION'))) initInChildProcess(dir);
    pglite = await PGlite.create({ dataDir: dir, extensions: { vector }, ...tuning });
    // closing the database lets the folder go: a stop by signal never reaches the exit hook
    const close = pglite.close.bind(pglite);
    pglite.close = async () => {
      await close();
      releaseDataDir(dir);
    };
  }
  await pglite.exec('CREATE EXTENSION IF NOT EXISTS vector');
  return {
    kind: 'pglite',
    description: inMemory ? 'pglite (in memory)' : `pglite (${resolve(dataDir, 'pglite')})`,
    pglite,
    // PGlite is one connection: pool size 1 (queries queue; never query the DataSource inside a transaction).
    options: { ...common, poolSize: 1, extra: { ...createPgConfig(pglite), pglite, preparedStatements: opts.preparedStatements !== false } } as unknown as DataSourceOptions,
  };
}

/**
 * PGLITE_PROFILE=small (bench:pglite-memory measured it): 16 MB of shared buffers keep PGlite's
 * WebAssembly memory at the module's 128 MB minimum, and V8's baseline compiler alone (Liftoff,
 * no optimizing tier-up) keeps the compiled PostgreSQL code small: together about 220 MB less
 * RSS at idle for about 10 % more CPU on database work. The V8 flag is process-wide and applies
 * to WebAssembly compiled after it is set, so it is set before the first PGlite starts.
 */
export function pgliteTuning(profile: 'small' | 'fast'): { startParams?: string[] } {
  if (profile === 'fast') return {};
  setFlagsFromString('--liftoff-only');
  return { startParams: [...(PGlite as unknown as { defaultStartParams: string[] }).defaultStartParams, '-c', 'shared_buffers=16MB'] };
}

/**
 * Creates a new embedded database (initdb) in a short-lived Node process. Creating one grows
 * PGlite's WebAssembly memory far beyond what running it needs, and that memory is never given
 * back; done here, the service starts on a ready data folder and idles as small as on any later
 * start (bench:pglite-memory). Costs one extra Node start, on the first start only.
 */
export function initInChildProcess(dir: string): void {
  const code = `const { PGlite } = await import(${JSON.stringify(pathToFileURL(require.resolve('@electric-sql/pglite')).href)});
const db = await PGlite.create({ dataDir: ${JSON.stringify(dir)} });
await db.close();`;
  execFileSync(process.execPath, ['--input-type=module', '-e', code], { stdio: ['ignore', 'ignore', 'inherit'], timeout: 120_000 });
}

/**
 * One process at a time may open an embedded PGlite data directory: a second one (another
 * `npm start`, or `npm run keys` beside a running service) would write the same files and
 * corrupt them, and PGlite itself does not refuse. The opener's pid and start time are kept in
 * `orion.lock`, removed when the database closes; a lock whose process is gone (a crash, a
 * kill) is taken over.
 */
export function claimDataDir(dir: string): void {
  const lock = join(dir, 'orion.lock');
  const [holder, started] = existsSync(lock) ? readFileSync(lock, 'utf8').trim().split(' ') : [];
  const pid = Number(holder);
  if (Number.isInteger(pid) && pid !== process.pid && isRunning(pid, started)) {
    throw new Error(
      `the embedded database in ${dir} is open in process ${pid}; one process at a time may open it. Stop that process, or use its HTTP routes (e.g. /api/admin/keys), or set DATABASE_URL to a PostgreSQL server that several processes can share`,
    );
  }
  writeFileSync(lock, `${process.pid} ${startTimeOf(process.pid)}\n`);
  if (heldLocks.size === 0) process.once('exit', releaseLocks);
  heldLocks.add(lock);
}

/**
 * Whether the process that wrote a lock still runs. A pid alone can be reused (in a new
 * container the service is pid 1 again), so the lock also keeps the process's start time where
 * the system tells it (Linux /proc), and a live pid with another start time is someone else.
 */
function isRunning(pid: number, started: string | undefined): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    // EPERM: it exists but belongs to another user
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  const now = startTimeOf(pid);
  return !started || !now || started === now;
}

/** A process's start time in clock ticks since boot (field 22 of /proc/<pid>/stat), or '' where unknown. */
function startTimeOf(pid: number): string {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // the command name (field 2) may hold spaces: count fields after its closing parenthesis
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? '';
  } catch {
    return '';
  }
}

const heldLocks = new Set<string>();

/** Lets another process open the folder (after the database is closed). */
export function releaseDataDir(dir: string): void {
  const lock = join(dir, 'orion.lock');
  dropLock(lock);
  heldLocks.delete(lock);
}

function releaseLocks(): void {
  for (const lock of heldLocks) dropLock(lock);
  heldLocks.clear();
}

function dropLock(lock: string): void {
  try {
    if (Number(readFileSync(lock, 'utf8').trim().split(' ')[0]) === process.pid) rmSync(lock);
  } catch {
    // already gone
  }
}

