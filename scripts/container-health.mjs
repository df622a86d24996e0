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
//
// The count belongs to that process: it is stored (in the container's /tmp, which a restart keeps)
// with the process's pid and start time, and a count of another process — the one before a
// restart — is not carried over. Failures while the process is younger than the start period
// (ORION_HEALTH_START_PERIOD seconds, default 30, the HEALTHCHECK's and compose's start_period)
// are not counted: a service still starting is not hung.
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const port = process.env.PORT || '3000';
const limit = Number(process.env.ORION_HEALTH_RESTART_AFTER ?? 5);
const startPeriod = Number(process.env.ORION_HEALTH_START_PERIOD ?? 30);
const state = process.env.ORION_HEALTH_STATE || join(tmpdir(), 'orion-health-failures');
/** Linux's USER_HZ, the unit of /proc/<pid>/stat's start time (100 on every architecture Node runs on) */
const CLOCK_TICKS = 100;

/** The stored count, when it is of this process (same pid, same start time); 0 otherwise. */
function failuresSoFar(target) {
  try {
    const saved = JSON.parse(readFileSync(state, 'utf8'));
    return saved && saved.pid === target.pid && saved.start === target.start ? Number(saved.failures) || 0 : 0;
  } catch {
    return 0;
  }
}

function save(target, failures) {
  writeFileSync(state, JSON.stringify({ pid: target.pid, start: target.start, failures }));
}

/**
 * The process's start time (clock ticks since boot, the 22nd field of /proc/<pid>/stat) and its
 * age in seconds; undefined for both when /proc cannot tell (the process is gone, or no /proc).
 */
function processTimes(pid) {
  if (pid === undefined) return { start: undefined, age: undefined };
  try {
    // the fields after the parenthesised command name start with the 3rd (state)
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /s, '').split(' ');
    const start = Number(fields[19]);
    const uptime = Number(readFileSync('/proc/uptime', 'utf8').split(' ')[0]);
    return { start, age: uptime - start / CLOCK_TICKS };
  } catch {
    return { start: undefined, age: undefined };
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
const pid = orionPid();
const { start, age } = processTimes(pid);
const target = { pid: pid ?? null, start: start ?? null };
if (ok) {
  save(target, 0);
  process.exit(0);
}
if (age !== undefined && age < startPeriod) {
  // still starting: a failure, not counted
  save(target, 0);
  console.error(`orion health: not ready ${Math.floor(age)} s after start (within the ${startPeriod} s start period; not counted)`);
  process.exit(1);
}
const failures = failuresSoFar(target) + 1;
save(target, failures);
if (limit > 0 && failures >= limit) {
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
