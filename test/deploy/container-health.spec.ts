import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from './deploy-files';

/**
 * scripts/container-health.mjs, the image's HEALTHCHECK (docker-compose.yml's too): a ready
 * service passes; after 5 failures in a row the check ends Orion — SIGTERM, then SIGKILL on the
 * next failing check — so that the container exits and its restart policy starts it again
 * (Docker itself never restarts an unhealthy container). Run here against a stand-in for Orion's
 * readiness route and a stand-in process that ignores SIGTERM (a hung service), named by
 * ORION_HEALTH_PID so that no process of this machine is looked for.
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

  const check = (pid: number | undefined, env: Record<string, string> = {}) =>
    new Promise<{ code: number | null; stderr: string }>((resolve) => {
      const c = spawn(process.execPath, [join(ROOT, 'scripts', 'container-health.mjs')], {
        env: { PATH: process.env.PATH, PORT: String(port), ORION_HEALTH_STATE: join(dir, 'failures'), ...(pid ? { ORION_HEALTH_PID: String(pid) } : {}), ...env },
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
    try {
      const r = await check(undefined, { PORT: String((hung.address() as AddressInfo).port), ORION_HEALTH_RESTART_AFTER: '0' });
      expect(r.code).toBe(1);
      // it ended by itself and counted the failure
      expect(readFileSync(join(dir, 'failures'), 'utf8')).toBe('1');
      expect(readFileSync(join(ROOT, 'scripts', 'container-health.mjs'), 'utf8')).toContain('AbortSignal.timeout(2500)');
    } finally {
      hung.closeAllConnections();
      await new Promise<void>((resolve) => hung.close(() => resolve()));
    }
  });
});
