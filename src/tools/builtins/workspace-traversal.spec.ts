import { execFileSync } from 'node:child_process';
import * as fsSync from 'node:fs';
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { AppConfigService } from '../../config/app-config.service';
import type { TraceRecord, TraceSink } from '../../trace/trace-sink.port';
import type { ToolRunResult } from '../tool-definition';
import { ToolRegistryService } from '../tool-registry.service';
import { ToolRunnerService } from '../tool-runner.service';
import { ListFilesTool } from './list-files.tool';
import { ReadFileTool } from './read-file.tool';
import { isInside } from '../../common/workspace/workspace-path.util';

/**
 * Path-traversal suite of list_files and read_file, run through the ToolRunner exactly as a
 * model's call would be. Layout (TMP is a fresh temp folder):
 *
 *   TMP/canary.txt                 the canary: its content must never appear in any output or trace
 *   TMP/outside/secret.txt         canary too
 *   TMP/ws/proj/...                the project folder of projectId "proj" (WORKSPACE_ROOT = TMP/ws)
 *   TMP/ws/proj-evil/secret.txt    sibling whose name starts with the project's (prefix trap)
 *
 * Every payload fails without reading anything outside. Two kinds:
 * - "escape": refused as leaving the folder / absolute / NUL / unresolvable / `~`
 *   (`validation_error`: the argument is not allowed);
 * - "literal": a harmless "not found" INSIDE the project (`exception`, like any missing file):
 *   percent-encodings and Unicode look-alikes are ordinary file names there, never decoded or
 *   normalized.
 */

const CANARY = `CANARY-${process.pid}-${Date.now()}-do-not-leak`;

type Kind = 'escape' | 'literal';

let tmp: string;
let ws: string;
let root: string;
let runner: ToolRunnerService;
let traces: TraceRecord[] = [];
let opened: string[];
let listed: string[];

beforeAll(async () => {
  tmp = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), 'orion-traversal-')));
  ws = path.join(tmp, 'ws');
  root = path.join(ws, 'proj');
  await fs.mkdir(path.join(root, 'docs', 'sub'), { recursive: true });
  await fs.mkdir(path.join(tmp, 'outside'));
  await fs.mkdir(path.join(ws, 'proj-evil'));
  await fs.writeFile(path.join(tmp, 'canary.txt'), CANARY);
  await fs.writeFile(path.join(tmp, 'outside', 'secret.txt'), CANARY);
  await fs.writeFile(path.join(ws, 'proj-evil', 'secret.txt'), CANARY);
  await fs.writeFile(path.join(ws, 'secret.txt'), CANARY);
  await fs.writeFile(path.join(root, 'docs', 'readme.md'), '# Readme\nhello\n');
  await fs.writeFile(path.join(root, 'docs', 'sub', 'file.txt'), 'inside file');
  await fs.writeFile(path.join(root, 'notes.txt'), 'notes');
  const link = (target: string, name: string) => fs.symlink(target, path.join(root, name));
  await link(path.join(tmp, 'canary.txt'), 'link-to-canary');
  await link('../../canary.txt', 'rel-link-to-canary');
  await link('/etc/passwd', 'link-to-passwd');
  await link('../../outside', 'link-dir-out');
  await link('../proj-evil', 'link-to-evil');
  await link('docs/readme.md', 'link-inside');
  await link('chain2', 'chain1');
  await link('chain3', 'chain2');
  await link('../../canary.txt', 'chain3');
  await link('loop2', 'loop1');
  await link('loop1', 'loop2');
  await link('../../missing-outside/x', 'dangling-out');
  await link(root, 'link-to-root'); // points at the project itself: inside, allowed
  await fs.symlink('../../../outside', path.join(root, 'docs', 'sub', 'deep-link-out'));

  const trace: TraceSink = { record: (e) => void traces.push(e), flush: async () => undefined };
  const config = {
    get: (k: string) => ({ WORKSPACE_ROOT: ws, TOOL_TIMEOUT_MS: 5000, TOOL_RESULT_MAX_BYTES: 65536 } as Record<string, unknown>)[k],
    list: () => [],
  } as unknown as AppConfigService;
  const registry = new ToolRegistryService(config, trace);
  registry.register(new ListFilesTool(config));
  registry.register(new ReadFileTool(config));
  runner = new ToolRunnerService(registry, config, trace);
});

afterAll(async () => {
  await fs.rm(tmp, { recursive: true, force: true });
});

beforeEach(() => {
  traces = [];
  opened = [];
  listed = [];
  const realOpen = fs.open.bind(fs);
  const realReaddir = fs.readdir.bind(fs);
  jest.spyOn(fs, 'open').mockImplementation(((p: fsSync.PathLike, ...rest: unknown[]) => {
    opened.push(String(p));
    return (realOpen as (...a: unknown[]) => unknown)(p, ...rest);
  }) as typeof fs.open);
  jest.spyOn(fs, 'readdir').mockImplementation(((p: fsSync.PathLike, ...rest: unknown[]) => {
    listed.push(String(p));
    return (realReaddir as (...a: unknown[]) => unknown)(p, ...rest);
  }) as typeof fs.readdir);
});

afterEach(() => {
  jest.restoreAllMocks();
});

function call(name: 'read_file' | 'list_files', args: Record<string, unknown>, projectId = 'proj'): Promise<ToolRunResult> {
  return runner.run({ name, arguments: JSON.stringify(args) }, { projectId, requestId: 'r', signal: new AbortController().signal });
}

/** Nothing outside the project was opened or listed, and the canary is nowhere. */
function expectContained(r: ToolRunResult): void {
  expect(r.outputText).not.toContain(CANARY);
  expect(JSON.stringify(r.output)).not.toContain(CANARY);
  expect(JSON.stringify(traces)).not.toContain(CANARY);
  for (const p of [...opened, ...listed]) expect(isInside(root, p)).toBe(true);
}

function messageOf(r: ToolRunResult): string {
  return String((r.output as { message?: unknown }).message);
}

const PAYLOADS: Array<[string, Kind]> = [
  // dot-dot, plain and hidden in the middle
  ['..', 'escape'],
  ['../..', 'escape'],
  ['../../..', 'escape'],
  ['../canary.txt', 'escape'],
  ['../../canary.txt', 'escape'],
  ['a/../../x', 'escape'],
  ['docs/../../canary.txt', 'escape'],
  ['./../canary.txt', 'escape'],
  ['docs/./sub/../../../canary.txt', 'escape'],
  ['docs/readme.md/../../..', 'escape'],
  ['../proj/notes.txt', 'escape'], // comes back inside, but climbs out on the way: refused
  ['docs/' + '../'.repeat(12) + 'etc/passwd', 'escape'],
  ['../'.repeat(400) + 'etc/passwd', 'escape'], // also longer than MAX_PATH_CHARS
  // absolute paths, POSIX and Windows forms
  ['/etc/passwd', 'escape'],
  ['/', 'escape'],
  ['//etc/passwd', 'escape'],
  ['/proc/self/root/etc/passwd', 'escape'],
  ['__CANARY_ABSOLUTE__', 'escape'],
  ['C:\\Windows\\win.ini', 'escape'],
  ['C:/Windows', 'escape'],
  ['c:foo', 'escape'],
  ['\\\\server\\share\\x', 'escape'],
  ['\\\\?\\C:\\Windows', 'escape'],
  ['\\etc\\passwd', 'escape'],
  // backslashes are separators here, so these are dot-dot escapes too
  ['..\\..\\canary.txt', 'escape'],
  ['..\\canary.txt', 'escape'],
  ['docs\\..\\..\\canary.txt', 'escape'],
  // NUL
  ['a\u0000b', 'escape'],
  ['docs/readme.md\u0000.txt', 'escape'],
  ['\u0000', 'escape'],
  // home folders
  ['~', 'escape'],
  ['~/canary.txt', 'escape'],
  ['~root/.ssh/id_rsa', 'escape'],
  // symlinks
  ['link-to-canary', 'escape'],
  ['rel-link-to-canary', 'escape'],
  ['link-to-passwd', 'escape'],
  ['link-dir-out', 'escape'],
  ['link-dir-out/secret.txt', 'escape'],
  ['link-dir-out/not-there.txt', 'escape'],
  ['link-dir-out/../../canary.txt', 'escape'],
  ['docs/sub/deep-link-out/secret.txt', 'escape'],
  ['chain1', 'escape'],
  ['chain2', 'escape'],
  ['loop1', 'escape'],
  ['dangling-out', 'escape'],
  ['dangling-out/x', 'escape'],
  // the sibling with the same prefix
  ['../proj-evil/secret.txt', 'escape'],
  ['link-to-evil', 'escape'],
  ['link-to-evil/secret.txt', 'escape'],
  ['../secret.txt', 'escape'],
  // literal names: URL encodings are not decoded
  ['%2e%2e%2fcanary.txt', 'literal'],
  ['%2e%2e/%2e%2e/canary.txt', 'literal'],
  ['..%2fcanary.txt', 'literal'],
  ['..%2f..%2fcanary.txt', 'literal'],
  ['%252e%252e%252fcanary.txt', 'literal'],
  ['%2e%2e%5c%2e%2e%5ccanary.txt', 'literal'],
  ['..%c0%afcanary.txt', 'literal'],
  // literal names: Unicode look-alikes are not normalized
  ['\u2025/canary.txt', 'literal'],
  ['\u2025/\u2025/canary.txt', 'literal'],
  ['\uff0e\uff0e/canary.txt', 'literal'],
  ['．．/．．/canary.txt', 'literal'],
  ['．．／canary.txt', 'literal'],
  ['\u2024\u2024/canary.txt', 'literal'],
  ['..\u2215canary.txt', 'literal'],
  // literal names: dots that are not `..`
  ['.../canary.txt', 'literal'],
  ['....//....//canary.txt', 'literal'],
  [' ../canary.txt', 'literal'],
  ['file:///etc/passwd', 'literal'],
  ['proc/self/root/etc/passwd', 'literal'],
];

describe('workspace traversal', () => {
  it('has at least 40 payloads', () => {
    expect(PAYLOADS.length).toBeGreaterThanOrEqual(40);
  });

  describe.each(['read_file', 'list_files'] as const)('%s', (tool) => {
    it.each(PAYLOADS)('refuses %j (%s)', async (payload, kind) => {
      const p = payload === '__CANARY_ABSOLUTE__' ? path.join(tmp, 'canary.txt') : payload;
      const r = await call(tool, tool === 'list_files' ? { path: p, recursive: true } : { path: p });
      expect(r.outcome).toBe(kind === 'literal' ? 'exception' : 'validation_error');
      expectContained(r);
      if (kind === 'literal') {
        expect(messageOf(r)).toMatch(/^not found/);
      } else {
        expect(messageOf(r)).not.toMatch(/^not found/);
        expect(messageOf(r)).toMatch(/outside the project|absolute|NUL|longer than|could not be resolved|home folders|~/);
      }
    });
  });

  it.each([['..'], ['../proj-evil'], ['proj/../proj-evil'], [''], ['a'.repeat(65)], ['proj\u0000'], ['proj/docs'], ['.']])(
    'refuses projectId %j',
    async (projectId) => {
      for (const tool of ['read_file', 'list_files'] as const) {
        const r = await call(tool, { path: tool === 'read_file' ? 'secret.txt' : '.' }, projectId);
        expect(r.outcome).toBe('validation_error');
        expect(messageOf(r)).toMatch(/projectId/);
        expectContained(r);
      }
    },
  );

  it('follows symlinks that stay inside the project', async () => {
    const r = await call('read_file', { path: 'link-inside' });
    expect(r.outcome).toBe('success');
    expect((r.output as { content: string }).content).toBe('# Readme\nhello\n');
    const viaRoot = await call('read_file', { path: 'link-to-root/notes.txt' });
    expect(viaRoot.outcome).toBe('success');
    expectContained(viaRoot);
  });

  it('reads and lists normally inside the project (so the refusals above are not a broken harness)', async () => {
    const read = await call('read_file', { path: 'docs/readme.md' });
    expect(read.outcome).toBe('success');
    expect(opened).toEqual([path.join(root, 'docs', 'readme.md')]); // the spies see the tools' file access
    const dotdotInside = await call('read_file', { path: 'docs/sub/../readme.md' });
    expect(dotdotInside.outcome).toBe('success');
    const backslash = await call('read_file', { path: 'docs\\readme.md' });
    expect(backslash.outcome).toBe('success');
    const list = await call('list_files', { path: '.', recursive: true });
    expect(list.outcome).toBe('success');
    expect(listed).toContain(path.join(root, 'docs', 'sub'));
    expectContained(list);
  });

  it('lists symlinks without following them, even recursively', async () => {
    const r = await call('list_files', { recursive: true });
    const entries = (r.output as { entries: Array<{ path: string; type: string }> }).entries;
    const byPath = new Map(entries.map((e) => [e.path, e.type]));
    for (const l of ['link-to-canary', 'link-dir-out', 'link-to-evil', 'chain1', 'loop1', 'dangling-out', 'link-to-root', 'docs/sub/deep-link-out']) {
      expect(byPath.get(l)).toBe('symlink');
    }
    expect(entries.some((e) => e.path.startsWith('link-dir-out/') || e.path.startsWith('link-to-root/') || e.path.startsWith('docs/sub/deep-link-out/'))).toBe(false);
    expect(byPath.get('docs/sub/file.txt')).toBe('file');
    expectContained(r);
  });

  describe('time-of-check / time-of-use swaps', () => {
    it('refuses a file swapped for a symlink between the check and the open (O_NOFOLLOW)', async () => {
      const victim = path.join(root, 'swap-me.txt');
      await fs.writeFile(victim, 'harmless');
      const realOpen = jest.requireActual<typeof import('node:fs')>('node:fs').promises.open;
      jest.spyOn(fs, 'open').mockImplementationOnce((async (p: fsSync.PathLike, flags?: number) => {
        opened.push(String(p));
        await fs.rm(victim);
        await fs.symlink(path.join(tmp, 'canary.txt'), victim);
        return realOpen(p, flags);
      }) as typeof fs.open);
      const r = await call('read_file', { path: 'swap-me.txt' });
      expect(r.outcome).toBe('validation_error');
      expect(messageOf(r)).toMatch(/changed into a symlink/);
      expect(r.outputText).not.toContain(CANARY);
      await fs.rm(victim);
    });

    it('refuses a folder swapped for a symlink to the outside between the check and the open', async () => {
      const dir = path.join(root, 'swap-dir');
      await fs.mkdir(dir);
      await fs.writeFile(path.join(dir, 'secret.txt'), 'harmless');
      const realOpen = jest.requireActual<typeof import('node:fs')>('node:fs').promises.open;
      jest.spyOn(fs, 'open').mockImplementationOnce((async (p: fsSync.PathLike, flags?: number) => {
        opened.push(String(p));
        await fs.rm(dir, { recursive: true });
        await fs.symlink(path.join(tmp, 'outside'), dir); // outside/secret.txt holds the canary
        return realOpen(p, flags);
      }) as typeof fs.open);
      const r = await call('read_file', { path: 'swap-dir/secret.txt' });
      expect(r.outcome).toBe('validation_error');
      expect(messageOf(r)).toMatch(/changed while it was being opened/);
      expect(r.outputText).not.toContain(CANARY);
      await fs.rm(dir);
    });
  });

  it('refuses a FIFO without blocking', async () => {
    const fifo = path.join(root, 'pipe');
    try {
      execFileSync('mkfifo', [fifo]);
    } catch {
      return; // no mkfifo on this machine
    }
    try {
      const r = await call('read_file', { path: 'pipe' });
      expect(r.outcome).toBe('validation_error');
      expect(messageOf(r)).toMatch(/not a regular file/);
      const list = await call('list_files', {});
      expect((list.output as { entries: Array<{ path: string; type: string }> }).entries).toContainEqual({ path: 'pipe', type: 'other' });
    } finally {
      fsSync.rmSync(fifo, { force: true });
    }
  });
});
