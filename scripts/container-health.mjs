// The container's health check (the Dockerfile's HEALTHCHECK and docker-compose.yml's): Orion is
// healthy when GET /api/health/ready answers 2xx within 2.5 s (the check's own timeout, under
// Docker's 3 s, so that a hung service counts here too).
//
// Docker only marks a container unhealthy; it never restarts one that is still running (only
// Swarm does). So this check ends Orion itself once it has failed ORION_HEALTH_RESTART_AFTER times
// in a row (default 5, Docker's retries; 0 turns this off): SIGTERM first (a graceful shutdown
// that stores what its live runs streamed), SIGKILL on every failing check after that (a process
// whose event loop is stuck never runs its SIGTERM handler). The container then exits and its
// restart policy starts it again (`unless-stopped` in docker-compose.yml). A check that passes
// resets the count.
//
// Which process: ORION_HEALTH_PID when set, else Orion's own process in the container — PID 1
// when it is node dist/main.js, or the child of the init process (compose runs it with
// `init: true`, because the kernel drops a SIGKILL sent to PID 1 from inside its container).
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const port = process.env.PORT || '3000';
const limit = Number(process.env.ORION_HEALTH_RESTART_AFTER ?? 5);
const state = process.env.ORION_HEALTH_STATE || join(tmpdir(), 'orion-health-failures');

function failuresSoFar() {
  try {
    return Number(readFileSync(state, 'utf8')) || 0;
  } catch {
    return 0;
  }
}

/** The pid of `node dist/main.js` in this container: PID 1, or a child of PID 1 (the init). */
function orionPid() {
  if (process.env.ORION_HEALTH_PID) return Number(process.env.ORION_HEALTH_PID);
  const isOrion = (pid) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').some((arg) => arg.endsWith('dist/main.js'));
    } catch {
      return false;
    }
  };
  if (isOrion(1)) return 1;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      // the 4th field of /proc/<pid>/stat, after the parenthesised command name, is the parent's pid
      const ppid = Number(readFileSync(`/proc/${entry}/stat`, 'utf8').replace(/^.*\) /s, '').split(' ')[1]);
      if (ppid === 1 && isOrion(entry)) return Number(entry);
    } catch {
      // the process ended meanwhile
    }
  }
  return undefined;
}

let ok = false;
try {
  ok = (await fetch(`http://127.0.0.1:${port}/api/health/ready`, { signal: AbortSignal.timeout(2500) })).ok;
} catch {
  ok = false;
}
if (ok) {
  writeFileSync(state, '0');
  process.exit(0);
}
const failures = failuresSoFar() + 1;
writeFileSync(state, String(failures));
if (limit > 0 && failures >= limit) {
  const pid = orionPid();
  const signal = failures === limit ? 'SIGTERM' : 'SIGKILL';
  if (pid !== undefined) {
    try {
      process.kill(pid, signal);
      console.error(`orion health: ${failures} failed checks in a row, sent ${signal} to ${pid}`);
    } catch (err) {
      console.error(`orion health: could not signal ${pid}: ${err instanceof Error ? err.message : err}`);
    }
  } else console.error('orion health: no Orion process found to end');
}
process.exit(1);
