/**
 * Runs the Dockerfile's commands outside Docker (no engine needed): stages the build context its
 * COPY lines name (refusing anything .dockerignore leaves out), runs the build stage's RUN steps,
 * starts the final stage's CMD with its ENV, runs its HEALTHCHECK until it passes, takes a heap
 * snapshot with SIGUSR2 (the service keeps serving) and stops it with SIGTERM during a turn
 * (the service drains: the turn finishes, its answer stored).
 *
 *   npm run check:image [-- path/to/Dockerfile]
 *
 * Two steps are not run as written: `npm install` is replaced by a link to this checkout's
 * node_modules (no registry needed, and the same lockfile), and `npm prune` is skipped (it would
 * prune that shared node_modules). Absolute paths in ENV (/data, /workspace) move into the
 * temporary folder. Exit code 0 when all of that passed.
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, symlinkSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { sse } from '../support/sse-client';
import { waitFor } from '../support/wait-for';
import { withTimeout } from '../../src/common/util/abort.util';
import { dockerignore, readDockerfile, ROOT } from './deploy-files';

const HEALTH_TIMEOUT_MS = 120_000;

interface Ended {
  code: number | null;
  signal: NodeJS.Signals | null;
}

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

/** `["a","b"]` (exec form) or `a b` (shell form) as an argv. */
const argv = (args: string): string[] => (args.trim().startsWith('[') ? JSON.parse(args) : ['sh', '-c', args]);

async function main(): Promise<number> {
  const steps = readDockerfile(process.argv[2] ?? 'Dockerfile');
  const final = Math.max(...steps.map((s) => s.stage));
  const ignored = dockerignore();
  const dir = mkdtempSync(join(tmpdir(), 'orion-image-'));
  const app = join(dir, 'app');
  mkdirSync(app);
  const t0 = Date.now();
  const log = (msg: string) => console.log(`[${((Date.now() - t0) / 1000).toFixed(1)} s] ${msg}`);
  let server: ReturnType<typeof spawn> | undefined;
  try {
    // the build stage's steps, then what the final stage copies from the context (scripts/…):
    // both land in the one folder the final stage's CMD runs in
    for (const step of steps.filter((s) => s.stage === 0 || (s.stage === final && s.keyword === 'COPY' && !s.args.startsWith('--from')))) {
      if (step.keyword === 'COPY') {
        const parts = step.args.split(/\s+/);
        const dest = parts.pop()!;
        for (const src of parts) {
          if (ignored(src)) throw new Error(`COPY ${src}: .dockerignore leaves it out of the build context`);
          const target = dest.endsWith('/') || parts.length > 1 ? join(app, dest, src.split('/').pop()!) : join(app, dest);
          mkdirSync(dirname(target), { recursive: true });
          cpSync(join(ROOT, src), target, { recursive: true });
        }
        log(`COPY ${step.args}`);
      } else if (step.keyword === 'RUN') {
        for (const cmd of step.args.split('&&').map((c) => c.trim())) {
          if (/^npm (install|ci)\b/.test(cmd)) {
            symlinkSync(join(ROOT, 'node_modules'), join(app, 'node_modules'), 'dir');
            log(`RUN ${cmd}: linked this checkout's node_modules instead`);
          } else if (/^npm prune\b/.test(cmd)) {
            log(`RUN ${cmd}: skipped (would prune the linked node_modules)`);
          } else {
            log(`RUN ${cmd}`);
            execFileSync('sh', ['-c', cmd], { cwd: app, stdio: 'inherit' });
          }
        }
      }
    }
    const env: Record<string, string> = { ...(process.env as Record<string, string>) };
    delete env.DATABASE_URL;
    for (const step of steps.filter((s) => s.stage === final && s.keyword === 'ENV')) {
      for (const [, k, v] of step.args.matchAll(/(\w+)=(\S+)/g)) env[k] = v.startsWith('/') ? join(dir, v) : v;
    }
    if (env.DATA_DIR) mkdirSync(env.DATA_DIR, { recursive: true });
    if (env.WORKSPACE_ROOT) mkdirSync(env.WORKSPACE_ROOT, { recursive: true });
    env.PORT = String(await freePort());
    // how docs/OPERATIONS.md says to take a heap snapshot of a running container (snapshotAndStop): the
    // image's working directory is not writable by its user, so snapshots go to the data volume
    if (!env.DATA_DIR) throw new Error('the final stage sets no DATA_DIR');
    env.NODE_OPTIONS = `${env.NODE_OPTIONS ?? ''} --heapsnapshot-signal=SIGUSR2 --diagnostic-dir=${env.DATA_DIR}`.trim();
    const [cmd, ...args] = argv(steps.filter((s) => s.stage === final && s.keyword === 'CMD').pop()!.args);
    log(`CMD ${cmd} ${args.join(' ')} (PORT=${env.PORT})`);
    server = spawn(cmd, args, { cwd: app, env, stdio: ['ignore', 'inherit', 'inherit'] });
    // the check's own restart (it ends Orion after failures in a row) is tested by
    // test/deploy/container-health.spec.ts; here it is polled every second while the service
    // starts, so it only reports, and it never looks for a process on this machine
    Object.assign(env, { ORION_HEALTH_RESTART_AFTER: '0', ORION_HEALTH_PID: String(server.pid), ORION_HEALTH_STATE: join(dir, 'health-failures') });
    const exited = new Promise<Ended>((resolve) => server!.once('exit', (code, signal) => resolve({ code, signal })));
    const health = steps.find((s) => s.stage === final && s.keyword === 'HEALTHCHECK');
    if (!health) throw new Error('the final stage has no HEALTHCHECK');
    const [hcmd, ...hargs] = argv(health.args.slice(health.args.indexOf('CMD') + 3));
    let attempts = 0;
    const healthy = () => spawnSync(hcmd, hargs, { cwd: app, env, stdio: 'ignore', timeout: 5_000 }).status === 0;
    const gone = () => server!.exitCode !== null || server!.signalCode !== null;
    await waitFor(() => gone() || (attempts++, healthy()), {
      timeoutMs: HEALTH_TIMEOUT_MS,
      intervalMs: 1_000,
      what: `the HEALTHCHECK to pass (within ${HEALTH_TIMEOUT_MS / 1000} s)`,
    });
    if (gone()) throw new Error(`the server exited with ${server.signalCode ?? `code ${server.exitCode}`} before it was healthy`);
    log(`HEALTHCHECK passed (attempt ${attempts})`);
    await snapshotAndStop(server, exited, env.DATA_DIR, `http://127.0.0.1:${env.PORT}`, healthy, log);
    return 0;
  } finally {
    if (server && server.exitCode === null && server.signalCode === null) {
      const gone = new Promise((r) => server!.once('exit', r));
      server.kill('SIGTERM');
      // a server that ignores SIGTERM is what a failed check may be about: it must not hang here
      if ((await withTimeout(gone, 10_000, 'timeout')) === 'timeout') {
        server.kill('SIGKILL');
        await gone;
      }
    }
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * The operator's diagnostics and the orchestrator's stop: SIGUSR2 (with Node's
 * --heapsnapshot-signal) writes a heap snapshot into the diagnostic directory and the service
 * keeps serving; SIGTERM during a turn drains the service (issue 44, rolling deploys): a new turn
 * is refused with 503 shutting_down, the running turn finishes within the grace period (the
 * stream ends with done and the stored answer's messageId) and the process ends within 30 s.
 */
async function snapshotAndStop(server: ReturnType<typeof spawn>, exited: Promise<Ended>, diagnosticDir: string, url: string, healthy: () => boolean, log: (msg: string) => void): Promise<void> {
  server.kill('SIGUSR2');
  const snapshot = await waitFor(() => readdirSync(diagnosticDir).find((f) => f.endsWith('.heapsnapshot')), {
    timeoutMs: 60_000,
    intervalMs: 500,
    what: `SIGUSR2 (--heapsnapshot-signal) to write a heap snapshot into ${diagnosticDir}`,
  });
  // the snapshot is written while the process is blocked; the health check answers once it is done
  const gone = () => server.exitCode !== null || server.signalCode !== null;
  await waitFor(() => gone() || healthy(), { timeoutMs: 30_000, intervalMs: 1_000, what: 'the service to answer its health check after a heap snapshot' });
  if (gone()) throw new Error(`SIGUSR2 stopped the service (${server.signalCode ?? `exit code ${server.exitCode}`})`);
  log(`SIGUSR2 wrote ${snapshot} (${(statSync(join(diagnosticDir, snapshot)).size / 1048576).toFixed(0)} MB); HEALTHCHECK still passes`);

  // a chat turn on the image's default replay model, SIGTERM at its first chunk
  let stopping = false;
  let refused: Promise<number> | null = null;
  const turn = await sse(`${url}/api/chat/messages`, {
    body: { content: 'Tell me about Orion at some length.' },
    timeoutMs: 30_000,
    onEvent: (e) => {
      if (e.event !== 'chunk' || stopping) return;
      stopping = true;
      server.kill('SIGTERM');
      // once draining (readiness down), a new turn is refused
      refused = waitFor(async () => (await fetch(`${url}/api/health/ready`)).status === 503, { timeoutMs: 10_000, what: 'readiness to fail while draining' }).then(() =>
        fetch(`${url}/api/chat/messages`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"content":"hi"}' }).then((r) => r.status, () => 0),
      );
    },
  });
  if (!stopping) throw new Error(`a chat turn streamed no chunk (HTTP ${turn.status}): ${turn.body.slice(0, 200)}`);
  const last = turn.events.at(-1);
  const done = last?.event === 'done' ? last.data : undefined;
  if (!done || done.stopReason === 'error' || typeof done.messageId !== 'string') throw new Error(`a turn streaming at SIGTERM should finish (done with its messageId); it ended with ${JSON.stringify(done ?? 'no done event')}`);
  const refusedStatus = await refused;
  if (refusedStatus !== 503) throw new Error(`a turn sent to a draining service should get 503 shutting_down; it got ${refusedStatus}`);
  const end = await withTimeout(exited, 30_000, 'timeout' as const);
  if (end === 'timeout') throw new Error('SIGTERM did not stop the service within 30 s');
  // Nest closes the application, then raises the signal again with its own listener removed
  if (end.code !== 0 && end.signal !== 'SIGTERM') throw new Error(`SIGTERM stopped the service with ${end.signal ?? `exit code ${end.code}`}`);
  log(`SIGTERM: a new turn got 503, the streaming turn finished with done{${String(done.stopReason)}} (message ${done.messageId}); the service stopped (${end.signal ?? `exit code ${end.code}`})`);
}

main().then(
  (code) => process.exit(code),
  (err: Error) => {
    console.error(`check:image failed: ${err.message}`);
    process.exit(1);
  },
);
