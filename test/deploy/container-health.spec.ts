import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { waitFor } from '../support/wait-for';
import { ROOT } from './deploy-files';

/**
 * scripts/container-health.mjs, the image's HEALTHCHECK (docker-compose.yml's too): a ready
 * service passes; after 5 failures in a row the check ends Orion — SIGTERM, then SIGKILL on the
 * next failing check — so that the container exits and its restart policy starts it again
 * (Docker itself never restarts an unhealthy container). Run here against a stand-in for Orion's
 * readiness route and a stand-in process that ignores SIGTERM (a hung service), named by
 * ORION_HEALTH_PID so that no process of this machine is looked for. The count belongs to the
 * process it checks (its pid and start time), and failures within the start period do not count.
 */
describe('the container health check (scripts/container-health.mjs)', () => {
  let server: Server;
  let port: number;
  let ready = true;
  let dir: string;

  beforeAll(async () => {
    server = createServer((req, res) => res.writeHead(req.url === '/api/health/ready' && ready ? 200 : 503).end());
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'orion-health-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  /** A process that notes each SIGTERM and goes on (as a stuck Orion would): only SIGKILL ends it. */
  function standIn(): Promise<{ child: ChildProcess; terms: () => number; ended: Promise<NodeJS.Signals | null> }> {
    const log = join(dir, 'terms');
    const child = spawn(process.execPath, ['-e', `const fs=require('fs');fs.writeFileSync(${JSON.stringify(log)},'');process.on('SIGTERM',()=>fs.appendFileSync(${JSON.stringify(log)},'T'));console.log('up');setInterval(()=>{},1000);`], { stdio: ['ignore', 'pipe', 'ignore'] });
    const ended = new Promise<NodeJS.Signals | null>((resolve) => child.once('exit', (_code, signal) => resolve(signal)));
    return new Promise((resolve) => child.stdout!.once('data', () => resolve({ child, terms: () => readFileSync(log, 'utf8').length, ended })));
  }

  /**
   * One run of the check against `pid`. The stand-ins are seconds old, so the start period is 0
   * unless a test sets it (`undefined` leaves it unset: the script's default).
   */
  const check = (pid: number | undefined, env: Record<string, string | undefined> = {}) =>
    new Promise<{ code: number | null; stderr: string }>((resolve) => {
      const all: Record<string, string | undefined> = { PATH: process.env.PATH, PORT: String(port), ORION_HEALTH_STATE: join(dir, 'failures'), ORION_HEALTH_START_PERIOD: '0', ...(pid ? { ORION_HEALTH_PID: String(pid) } : {}), ...env };
      const c = spawn(process.execPath, [join(ROOT, 'scripts', 'container-health.mjs')], {
        env: Object.fromEntries(Object.entries(all).filter((e): e is [string, string] => e[1] !== undefined)),
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      let stderr = '';
      c.stderr!.on('data', (b: Buffer) => (stderr += b.toString()));
      c.once('exit', (code) => resolve({ code, stderr }));
    });

  it('passes while /api/health/ready answers 2xx, and a pass resets the count of failures', async () => {
    const orion = await standIn();
    try {
      ready = true;
      expect((await check(orion.child.pid)).code).toBe(0);
      ready = false;
      for (let i = 0; i < 4; i++) expect((await check(orion.child.pid)).code).toBe(1);
      ready = true;
      expect((await check(orion.child.pid)).code).toBe(0);
      ready = false;
      // four more failures after the pass: still under five in a row, nothing is sent
      for (let i = 0; i < 4; i++) expect((await check(orion.child.pid)).code).toBe(1);
      expect(orion.terms()).toBe(0);
      expect(orion.child.exitCode).toBeNull();
    } finally {
      orion.child.kill('SIGKILL');
    }
  });

  it('ends the service after 5 failures in a row: SIGTERM at the fifth, SIGKILL at the sixth when it is still there', async () => {
    const orion = await standIn();
    ready = false;
    for (let i = 1; i <= 4; i++) expect((await check(orion.child.pid)).code).toBe(1);
    expect(orion.terms()).toBe(0);
    const fifth = await check(orion.child.pid);
    expect(fifth).toEqual({ code: 1, stderr: expect.stringContaining('5 failed checks in a row, sent SIGTERM') });
    // the stand-in ignores it, as a hung service does
    expect(orion.terms()).toBe(1);
    expect(orion.child.exitCode).toBeNull();
    const sixth = await check(orion.child.pid);
    expect(sixth.stderr).toContain('sent SIGKILL');
    expect(await orion.ended).toBe('SIGKILL');
  });

  it('ORION_HEALTH_RESTART_AFTER=0 only reports', async () => {
    const orion = await standIn();
    try {
      ready = false;
      for (let i = 0; i < 7; i++) expect((await check(orion.child.pid, { ORION_HEALTH_RESTART_AFTER: '0' })).code).toBe(1);
      expect(orion.terms()).toBe(0);
      expect(orion.child.exitCode).toBeNull();
    } finally {
      orion.child.kill('SIGKILL');
    }
  });

  it('a service that never answers fails the check by the check’s own timeout, which counts it (Docker’s would kill the check uncounted)', async () => {
    const hung = createServer(() => undefined);
    await new Promise<void>((resolve) => hung.listen(0, '127.0.0.1', resolve));
    const orion = await standIn();
    try {
      const r = await check(orion.child.pid, { PORT: String((hung.address() as AddressInfo).port), ORION_HEALTH_RESTART_AFTER: '0' });
      expect(r.code).toBe(1);
      // it ended by itself and counted the failure
      expect(JSON.parse(readFileSync(join(dir, 'failures'), 'utf8'))).toMatchObject({ pid: orion.child.pid, failures: 1 });
      expect(readFileSync(join(ROOT, 'scripts', 'container-health.mjs'), 'utf8')).toContain('AbortSignal.timeout(2500)');
    } finally {
      orion.child.kill('SIGKILL');
      hung.closeAllConnections();
      await new Promise<void>((resolve) => hung.close(() => resolve()));
    }
  });

  it('the count belongs to the process it checks: after a restart (another process) the old count is not carried over', async () => {
    ready = false;
    const before = await standIn();
    for (let i = 0; i < 4; i++) expect((await check(before.child.pid)).code).toBe(1);
    before.child.kill('SIGKILL');
    await before.ended;
    // the container restarted: the new process's first failure is its first, not the fifth
    const after = await standIn();
    try {
      for (let i = 0; i < 4; i++) expect((await check(after.child.pid)).stderr).toBe('');
      expect(after.terms()).toBe(0);
      expect((await check(after.child.pid)).stderr).toContain('5 failed checks in a row, sent SIGTERM');
      // the same pid with another start time (a restart in a fresh PID namespace reuses pids) is another process too
      const saved = JSON.parse(readFileSync(join(dir, 'failures'), 'utf8')) as { pid: number; start: number; failures: number };
      writeFileSync(join(dir, 'failures'), JSON.stringify({ ...saved, start: saved.start - 1 }));
      expect((await check(after.child.pid)).stderr).toBe('');
      expect(after.terms()).toBe(1);
      expect(after.child.exitCode).toBeNull();
    } finally {
      after.child.kill('SIGKILL');
    }
  });

  it('failures within the start period (ORION_HEALTH_START_PERIOD, default 30 s, as the HEALTHCHECK’s) are not counted', async () => {
    const orion = await standIn();
    try {
      ready = false;
      // the default: the stand-in is younger than 30 s
      for (let i = 0; i < 7; i++) {
        const r = await check(orion.child.pid, { ORION_HEALTH_START_PERIOD: undefined });
        expect([r.code, r.stderr]).toEqual([1, expect.stringContaining('within the 30 s start period; not counted')]);
      }
      expect(orion.terms()).toBe(0);
      expect(JSON.parse(readFileSync(join(dir, 'failures'), 'utf8'))).toMatchObject({ failures: 0 });
      // once it is older than the start period (1 s here), failures count from the first
      await waitFor(async () => !(await check(orion.child.pid, { ORION_HEALTH_START_PERIOD: '1' })).stderr.includes('start period'), { timeoutMs: 10_000, intervalMs: 100, what: 'the stand-in to outgrow a 1 s start period' });
      expect(JSON.parse(readFileSync(join(dir, 'failures'), 'utf8'))).toMatchObject({ failures: 1 });
      for (let i = 0; i < 3; i++) expect((await check(orion.child.pid, { ORION_HEALTH_START_PERIOD: '1' })).stderr).toBe('');
      expect((await check(orion.child.pid, { ORION_HEALTH_START_PERIOD: '1' })).stderr).toContain('5 failed checks in a row, sent SIGTERM');
      expect(orion.terms()).toBe(1);
    } finally {
      orion.child.kill('SIGKILL');
    }
    // the value is the Dockerfile's and compose's start_period
    expect(readFileSync(join(ROOT, 'Dockerfile'), 'utf8')).toContain('--start-period=30s');
    expect(readFileSync(join(ROOT, 'docker-compose.yml'), 'utf8')).toMatch(/test: \["CMD", "node", "scripts\/container-health.mjs"\][\s\S]*?start_period: 30s/);
  });
});
