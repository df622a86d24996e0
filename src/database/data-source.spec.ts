import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { claimDataDir, openDatabase } from './data-source';

/** The embedded default: a new data folder is created, migrated, and opened again as it was left. */
describe('openDatabase (embedded PGlite in DATA_DIR)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'orion-embedded-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('creates a new database (in a child process), runs the migrations, and finds its data on the next open', async () => {
    const first = await openDatabase(undefined, dir, { profile: 'small' });
    expect(first.kind).toBe('pglite');
    expect(existsSync(join(dir, 'pglite', 'PG_VERSION'))).toBe(true);
    const ds = await new DataSource(first.options).initialize();
    await ds.query(`INSERT INTO conversations (project_id, title) VALUES ('p', 'kept')`);
    // the small profile's shared buffers are in force
    expect((await ds.query('SHOW shared_buffers'))[0].shared_buffers).toBe('16MB');
    await ds.destroy();
    // the folder is held while open, and let go on close (a stop by signal never runs exit hooks)
    expect(readFileSync(join(dir, 'pglite', 'orion.lock'), 'utf8').trim().split(' ')[0]).toBe(String(process.pid));
    await first.pglite!.close();
    expect(existsSync(join(dir, 'pglite', 'orion.lock'))).toBe(false);

    const again = await openDatabase(undefined, dir, { profile: 'fast' });
    const ds2 = await new DataSource(again.options).initialize();
    expect(await ds2.query(`SELECT title FROM conversations WHERE project_id = 'p'`)).toEqual([{ title: 'kept' }]);
    expect((await ds2.query('SHOW shared_buffers'))[0].shared_buffers).not.toBe('16MB');
    await ds2.destroy();
    await again.pglite!.close();
  }, 120_000);
});

describe('claimDataDir: one process per embedded data folder', () => {
  const dir = mkdtempSync(join(tmpdir(), 'orion-lock-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('refuses a folder another live process holds, and takes over the lock of one that is gone', async () => {
    const other = spawn('sleep', ['30']);
    await new Promise((r) => other.once('spawn', r));
    writeFileSync(join(dir, 'orion.lock'), `${other.pid}\n`);
    expect(() => claimDataDir(dir)).toThrow(new RegExp(`open in process ${other.pid}`));
    // the same pid with another start time is another process (a pid reused, e.g. pid 1 in a new container)
    writeFileSync(join(dir, 'orion.lock'), `${other.pid} 1\n`);
    claimDataDir(dir);
    writeFileSync(join(dir, 'orion.lock'), `${other.pid}\n`);
    other.kill('SIGKILL');
    await new Promise((r) => other.once('exit', r));
    claimDataDir(dir);
    expect(readFileSync(join(dir, 'orion.lock'), 'utf8').trim().split(' ')[0]).toBe(String(process.pid));
    // this process may open it again (a restart inside one process)
    expect(() => claimDataDir(dir)).not.toThrow();
  });
});
