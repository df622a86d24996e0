/**
 * npm run test:outage   (PostgreSQL only: needs PostgreSQL's initdb and pg_ctl on this machine)
 *
 * Starts a throwaway PostgreSQL server of its own (initdb into a temporary folder, run as the
 * `postgres` OS user when this runs as root), two Orion processes on it and a scripted model,
 * then stops the database while a turn streams and checks what a user would notice:
 * - the running turn ends with `error` + `done` (or completes, if its writes came through);
 * - while the database is down a new turn is `503 database_unavailable`, `/api/health` says
 *   `db.status: down` and `/api/health/ready` is 503;
 * - once the database is back the same processes serve a new turn (no restart), and both LISTEN
 *   connections are back;
 * - a cancel whose NOTIFY was missed (only the stored flag is set) still stops the run, and so
 *   does one announced while only the LISTEN connections are cut; they come back by themselves.
 * Prints one line per check; exits 1 on any failure, 0 with a note when PostgreSQL is missing.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { freePort, readSse, startModel, startOrion, type Instance } from './harness';
import { waitFor } from '../support/wait-for';

const DIST = process.env.ORION_DIST ?? join(__dirname, '..', '..', 'dist', 'main.js');
const PG_ROOT = '/usr/lib/postgresql';
const failures: string[] = [];
const ok = (cond: boolean, what: string) => {
  console.log(`${cond ? 'ok  ' : 'FAIL'} ${what}`);
  if (!cond) failures.push(what);
};

function pgBin(): string | null {
  if (!existsSync(PG_ROOT)) return null;
  const v = readdirSync(PG_ROOT).sort((x, y) => Number(y) - Number(x))[0];
  return v && existsSync(join(PG_ROOT, v, 'bin', 'initdb')) ? join(PG_ROOT, v, 'bin') : null;
}

/** PostgreSQL refuses to run as root: run its tools as `postgres` then. */
function asPostgres(bin: string, args: string[]): void {
  const root = process.getuid?.() === 0;
  execFileSync(root ? 'runuser' : bin, root ? ['-u', 'postgres', '--', bin, ...args] : args, { stdio: 'ignore' });
}

/** True once `fn` holds (a check that throws counts as not yet), false if it did not within `ms`. */
function until(fn: () => Promise<boolean>, ms: number): Promise<boolean> {
  return waitFor(fn, { timeoutMs: ms, intervalMs: 200 }).then(
    () => true,
    () => false,
  );
}

async function main() {
  const bin = pgBin();
  if (!bin) {
    console.log(`skipped: no PostgreSQL server binaries under ${PG_ROOT} (the outage test needs PostgreSQL; PGlite has no server to stop)`);
    return;
  }
  const dir = mkdtempSync(join(tmpdir(), 'orion-outage-'));
  chmodSync(dir, 0o777);
  const data = join(dir, 'data');
  const port = Number(process.env.OUTAGE_PG_PORT ?? (await freePort()));
  const pgCtl = (...args: string[]) => asPostgres(join(bin, 'pg_ctl'), ['-D', data, '-s', '-w', ...args]);
  const startDb = () => pgCtl('-o', `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1`, '-l', join(dir, 'log'), 'start');
  asPostgres(join(bin, 'initdb'), ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8']);
  startDb();
  const admin = `postgres://postgres@127.0.0.1:${port}/postgres`;
  const c = new Client({ connectionString: admin });
  await c.connect();
  await c.query('CREATE DATABASE orion_outage');
  await c.end();
  const url = `postgres://postgres@127.0.0.1:${port}/orion_outage`;

  let script = { words: Array.from({ length: 60 }, (_, i) => `w${i}`), calls: [] as Array<[string, string]>, delayMs: 50 };
  const model = await startModel(() => script, () => undefined);
  const env = { DATABASE_URL: url, LLM_PROVIDER: 'openai', LLM_BASE_URL: `http://127.0.0.1:${model.port}/v1`, LLM_MODEL: 'outage', RUN_LEASE_MS: '2000' };
  let a: Instance | null = null;
  let b: Instance | null = null;
  try {
    a = await startOrion(DIST, await freePort(), env);
    b = await startOrion(DIST, await freePort(), env);
    const A = a;

    // 1. the database stops while a turn streams
    let stopped = false;
    const turn = await readSse(`${A.url}/api/chat/messages`, { content: 'talk for a while' }, (e) => {
      if (e.event === 'chunk' && !stopped) {
        stopped = true;
        pgCtl('-m', 'fast', 'stop');
      }
    });
    const last = turn.events.at(-1);
    const answered = (e: { event: string; data: Record<string, unknown> } | undefined) => e?.event === 'done' && !['error', 'cancelled'].includes(String(e.data.stopReason));
    const completed = answered(last);
    const errored = last?.event === 'done' && last.data.stopReason === 'error' && turn.events.some((e) => e.event === 'error');
    ok(completed || errored, `a turn streaming when the database stops ends with error + done (or completes): ${last?.event} ${String(last?.data.stopReason ?? '')} ${String(turn.events.find((e) => e.event === 'error')?.data.code ?? '')}`);
    const ids = turn.events.map((e) => e.id);
    ok(ids.every((id, i) => id === i + 1), `…and its events' ids run 1, 2, 3… with no gap (the error is numbered after the last event sent): ${ids.length} events, last ${String(ids.at(-1))}`);

    // 2. while it is down
    const refused = await fetch(`${A.url}/api/chat/messages`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ content: 'hello' }) });
    const body = (await refused.json().catch(() => ({}))) as { error?: string };
    ok(refused.status === 503 && body.error === 'database_unavailable', `a new turn while the database is down: ${refused.status} ${body.error}`);
    const health = (await (await fetch(`${A.url}/api/health`)).json()) as { status: string; db: { status: string } };
    ok(health.status === 'degraded' && health.db.status === 'down', `/api/health while down: ${health.status}, db ${health.db.status}`);
    ok((await fetch(`${A.url}/api/health/ready`)).status === 503, '/api/health/ready is 503 while down');

    // 3. back: the same processes recover by themselves
    startDb();
    ok(await until(async () => (await fetch(`${A.url}/api/health/ready`)).status === 200, 30_000), '/api/health/ready is 200 again without restarting Orion');
    script = { words: ['back', 'again'], calls: [], delayMs: 0 };
    const after = await readSse(`${A.url}/api/chat/messages`, { content: 'are you back?' }, () => undefined);
    ok(answered(after.events.at(-1)), `a new turn after the outage completes: ${String(after.events.at(-1)?.data.stopReason)}`);
    const pg = new Client({ connectionString: url });
    await pg.connect();
    try {
      const listening = async () => Number((await pg.query<{ n: string }>(`SELECT count(*) AS n FROM pg_stat_activity WHERE datname = 'orion_outage' AND query LIKE 'LISTEN %'`)).rows[0].n);
      ok(await until(async () => (await listening()) >= 2, 30_000), 'both instances LISTEN again after the outage');
      // the run cut by the outage could not store its end: the sweeper closes it once the lease runs out
      const cut = String(turn.events[0]?.data.requestId);
      const statusOf = async () => (await pg.query<{ status: string }>('SELECT status FROM runs WHERE request_id = $1', [cut])).rows[0]?.status;
      ok(await until(async () => (await statusOf()) !== 'running', 30_000), `the run cut by the outage is closed after it: ${await statusOf()}`);

      // 4. a cancel whose NOTIFY never arrived: only the stored flag says it
      script = { words: Array.from({ length: 200 }, (_, i) => `w${i}`), calls: [], delayMs: 50 };
      let requestId = '';
      const cancelled = await readSse(`${A.url}/api/chat/messages`, { content: 'talk for a long while' }, (e) => {
        if (e.event === 'start') requestId = String(e.data.requestId);
        if (e.event === 'chunk' && e.id === 3) void pg.query(`UPDATE runs SET control = 'cancel' WHERE request_id = $1`, [requestId]);
      });
      ok(cancelled.events.at(-1)?.data.stopReason === 'cancelled', `a cancel stored while its NOTIFY was lost stops the run: ${String(cancelled.events.at(-1)?.data.stopReason)}`);

      // 5. only the LISTEN connections are cut (the database stays up), and a cancel is stored
      // and announced in the same moment, before they can be back: its NOTIFY reaches nobody
      let cutId = '';
      let cutAt: Promise<{ listeningAfter: number }> | null = null;
      const cutRun = await readSse(`${A.url}/api/chat/messages`, { content: 'talk while LISTEN is cut' }, (e) => {
        if (e.event === 'start') cutId = String(e.data.requestId);
        if (e.event === 'chunk' && e.id === 3 && !cutAt) {
          cutAt = pg
            .query(
              `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = 'orion_outage' AND query LIKE 'LISTEN %';
               UPDATE runs SET control = 'cancel' WHERE request_id = '${cutId}';
               SELECT pg_notify('orion_run_control', json_build_object('requestId', '${cutId}'::text, 'control', 'cancel')::text);`,
            )
            .then(async () => ({ listeningAfter: await listening() }));
        }
      });
      const severed = await (cutAt as Promise<{ listeningAfter: number }> | null);
      ok(!!severed, 'the LISTEN connections were cut while a turn streamed');
      console.log(`     (LISTEN connections up right after the cancel was announced: ${severed?.listeningAfter})`);
      ok(cutRun.events.at(-1)?.data.stopReason === 'cancelled', `a cancel announced while LISTEN was cut still stops the run: ${String(cutRun.events.at(-1)?.data.stopReason)}`);
      ok(await until(async () => (await listening()) >= 2, 30_000), 'both instances LISTEN again after their LISTEN connections were cut');
    } finally {
      await pg.end();
    }
  } finally {
    a?.child.kill('SIGKILL');
    b?.child.kill('SIGKILL');
    model.close();
    try {
      pgCtl('-m', 'immediate', 'stop');
    } catch {
      /* already stopped */
    }
    rmSync(dir, { recursive: true, force: true });
  }
  console.log(failures.length ? `\n${failures.length} outage check(s) failed` : '\noutage: all checks passed');
  process.exit(failures.length ? 1 : 0);
}

void main().catch((err) => {
  console.error(err);
  process.exit(1);
});
