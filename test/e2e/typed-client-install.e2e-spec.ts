import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTestDatabase, onPostgres } from '../support/db';
import { ReplayServer, respond } from '../support/replay-server';
import { waitFor } from '../support/wait-for';

const ROOT = join(__dirname, '..', '..');
const CLIENT = join(ROOT, 'clients', 'typescript');
const KEY = 'packed-client-key';
const TSC = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
const TSX = join(ROOT, 'node_modules', 'tsx', 'dist', 'cli.mjs');

/** The client README's example block, as a user copies it. */
const example = () => /## Example\n[\s\S]*?```ts\n([\s\S]*?)```/.exec(readFileSync(join(CLIENT, 'README.md'), 'utf8'))![1];

function run(cmd: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = process.env) {
  const r = spawnSync(cmd, args, { cwd, env, encoding: 'utf8', timeout: 240_000 });
  return { status: r.status, out: `${r.stdout ?? ''}${r.stderr ?? ''}` };
}

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const p = (s.address() as AddressInfo).port;
      s.close(() => resolve(p));
    });
  });
}

/** tsc in the user's folder, with the installed package's own types (and Node's, for `process`). */
const typecheck = (dir: string, file: string) =>
  run(process.execPath, [TSC, '--noEmit', '--strict', '--module', 'nodenext', '--moduleResolution', 'nodenext', '--target', 'es2022', '--types', 'node', '--typeRoots', join(ROOT, 'node_modules', '@types'), file], dir);

/**
 * Issue 42, item 4: the typed client as a user gets it. `npm pack` builds it (no manual build
 * first), the tarball installs into an empty folder of its own, and the client README's example,
 * copied as written into that folder, type-checks against the installed types and prints the
 * answer of the built service (`node dist/main.js`, a process of its own).
 */
describe(`the packed typed client installed in an empty folder (${onPostgres() ? 'PostgreSQL' : 'PGlite'})`, () => {
  let llm: ReplayServer;
  let service: ChildProcess;
  let url: string;
  let dropDb: () => Promise<void>;
  const temp = mkdtempSync(join(tmpdir(), 'orion-client-pack-'));
  const app = join(temp, 'app');

  /** The example run with tsx in the user's folder (not spawnSync: the scripted model answers from this process). */
  const runExample = (dir: string) =>
    new Promise<{ code: number | null; out: string }>((resolve) => {
      const child = spawn(process.execPath, [TSX, 'example.ts'], { cwd: dir, env: { ...process.env, ORION_URL: url, ORION_API_KEY: KEY } });
      let out = '';
      child.stdout.on('data', (b: Buffer) => (out += b.toString()));
      child.stderr.on('data', (b: Buffer) => (out += b.toString()));
      child.on('close', (code) => resolve({ code, out }));
    });

  beforeAll(async () => {
    const built = run(process.execPath, [join(ROOT, 'scripts', 'build-if-stale.mjs')], ROOT);
    expect([built.status, built.out]).toEqual([0, expect.any(String)]);
    llm = await ReplayServer.start();
    const db = await createTestDatabase();
    dropDb = db.drop;
    const port = await freePort();
    const workspace = mkdtempSync(join(temp, 'ws-'));
    service = spawn(process.execPath, [join(ROOT, 'dist', 'main.js')], {
      cwd: mkdtempSync(join(temp, 'cwd-')),
      env: { ...process.env, DATABASE_URL: db.url, WORKSPACE_ROOT: workspace, PORT: String(port), LLM_PROVIDER: 'openai', LLM_BASE_URL: llm.openAiBaseUrl, LLM_MODEL: 'scripted-model', API_KEYS: KEY, MCP_CONFIG: '', LOG_LEVEL: 'error' },
      stdio: 'ignore',
    });
    url = `http://127.0.0.1:${port}`;
    await waitFor(async () => (await fetch(`${url}/api/health/ready`)).ok, { timeoutMs: 60_000, intervalMs: 100, what: 'the built service to start' });
  }, 300_000);
  afterAll(async () => {
    service?.kill('SIGTERM');
    await llm?.close();
    await dropDb?.();
    rmSync(temp, { recursive: true, force: true });
  });

  it('npm pack builds dist/ into the tarball; it installs in an empty folder, types and all; the README example prints the answer', async () => {
    const packed = run('npm', ['pack', '--pack-destination', temp], CLIENT);
    expect([packed.status, packed.out]).toEqual([0, expect.any(String)]);
    const [tarball] = readdirSync(temp).filter((f) => f.endsWith('.tgz'));
    const listed = run('tar', ['tzf', join(temp, tarball)], temp).out.split('\n');
    expect(listed).toEqual(expect.arrayContaining(['package/dist/index.js', 'package/dist/index.d.ts', 'package/package.json']));
    // what the package is made from, and nothing of its tests
    expect(listed.filter((f) => f.includes('test/') || f.includes('node_modules/'))).toEqual([]);

    // an empty ES-module project of the user's
    rmSync(app, { recursive: true, force: true });
    run('mkdir', ['-p', app], temp);
    writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'uses-orion', private: true, type: 'module' }));
    const installed = run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', join(temp, tarball)], app);
    expect([installed.status, installed.out]).toEqual([0, expect.any(String)]);

    writeFileSync(join(app, 'example.ts'), example());
    expect(typecheck(app, 'example.ts')).toEqual({ status: 0, out: '' });
    // the types are the package's own: a field no event has is an error there
    writeFileSync(join(app, 'wrong.ts'), example().replace('event.content', 'event.contents'));
    const wrong = typecheck(app, 'wrong.ts');
    expect(wrong.status).not.toBe(0);
    expect(wrong.out).toMatch(/wrong\.ts.*Property 'contents' does not exist/);

    llm.enqueue(respond.turn([{ text: 'The roadmap ' }, { text: 'has one item.' }]));
    expect(await runExample(app)).toEqual({ code: 0, out: 'The roadmap has one item.' });
  }, 240_000);

  it('npm install <the client folder> builds it as it installs (its prepare script, allowed as the README says under strict-allow-scripts): the example type-checks and runs there too', async () => {
    const folderApp = join(temp, 'from-folder');
    run('mkdir', ['-p', folderApp], temp);
    writeFileSync(join(folderApp, 'package.json'), JSON.stringify({ name: 'uses-orion-folder', private: true, type: 'module' }));
    // the README's way to allow the prepare script with strict-allow-scripts on, as written there
    const allow = /^npm pkg set .*allowScripts.*$/m.exec(readFileSync(join(CLIENT, 'README.md'), 'utf8'))![0].replaceAll('path/to/orion/clients/typescript', CLIENT);
    expect(run('sh', ['-c', allow], folderApp)).toEqual({ status: 0, out: '' });
    const since = Date.now();
    const installed = run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', '--strict-allow-scripts', CLIENT], folderApp);
    expect([installed.status, installed.out]).toEqual([0, expect.any(String)]);
    // built by the install itself, not left from an earlier build
    expect(statSync(join(folderApp, 'node_modules', '@orion', 'client', 'dist', 'index.js')).mtimeMs).toBeGreaterThanOrEqual(since - 1000);
    writeFileSync(join(folderApp, 'example.ts'), example());
    expect(typecheck(folderApp, 'example.ts')).toEqual({ status: 0, out: '' });
    llm.enqueue(respond.turn([{ text: 'Installed ' }, { text: 'from the folder.' }]));
    expect(await runExample(folderApp)).toEqual({ code: 0, out: 'Installed from the folder.' });
  }, 240_000);
});
