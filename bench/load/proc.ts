/** Readings of other processes from /proc (Linux): CPU time, RSS, write syscalls. */
import { readFileSync } from 'node:fs';

/** USER_HZ: /proc reports CPU time in ticks of 1/100 s on Linux */
const TICK_MS = 10;

/** user + system CPU of a process (all its threads), in ms; 0 when it is gone */
export function cpuMs(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) * TICK_MS;
  } catch {
    return 0;
  }
}

export function rssBytes(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

/**
 * /proc/<pid>/io: `syscw` counts write/writev calls of the process (sockets included: SSE to
 * clients, requests to the model, the PostgreSQL protocol, logs); `write_bytes` is what it sent
 * to storage (PGlite's files).
 */
export function io(pid: number): { syscw: number; wchar: number; writeBytes: number } {
  try {
    const t = readFileSync(`/proc/${pid}/io`, 'utf8');
    const get = (k: string) => Number(new RegExp(`^${k}: (\\d+)`, 'm').exec(t)?.[1] ?? 0);
    return { syscw: get('syscw'), wchar: get('wchar'), writeBytes: get('write_bytes') };
  } catch {
    return { syscw: Number.NaN, wchar: Number.NaN, writeBytes: Number.NaN };
  }
}

/** Samples a process's RSS every 100 ms; `stop()` returns the highest value seen. */
export function rssPeak(pid: number): { stop: () => number } {
  let peak = rssBytes(pid);
  const t = setInterval(() => (peak = Math.max(peak, rssBytes(pid))), 100);
  return {
    stop: () => {
      clearInterval(t);
      return Math.max(peak, rssBytes(pid));
    },
  };
}
