import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { AppConfigService } from '../../config/app-config.service';
import type { ToolExecutionContext } from '../tool-definition';
import { LIST_MAX_DEPTH, LIST_MAX_ENTRIES, ListFilesTool, type ListFilesOutput } from './list-files.tool';

let ws: string;
let root: string;
let tool: ListFilesTool;

const ctx = (projectId = 'proj'): ToolExecutionContext => ({ projectId, requestId: 'r', signal: new AbortController().signal });
const list = async (args: Record<string, unknown>, projectId = 'proj') =>
  (await tool.execute({ path: '.', recursive: false, ...args }, ctx(projectId))).output as ListFilesOutput;

beforeAll(async () => {
  ws = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), 'orion-list-')));
  root = path.join(ws, 'proj');
  await fs.mkdir(path.join(root, 'docs', 'guides'), { recursive: true });
  await fs.mkdir(path.join(root, 'empty'));
  await fs.mkdir(path.join(root, '.git', 'objects'), { recursive: true });
  await fs.writeFile(path.join(root, '.git', 'HEAD'), 'ref');
  await fs.writeFile(path.join(root, 'b.txt'), 'bb');
  await fs.writeFile(path.join(root, 'a.md'), 'a');
  await fs.writeFile(path.join(root, 'docs', 'intro.md'), 'intro');
  await fs.writeFile(path.join(root, 'docs', 'guides', 'setup.md'), 'setup!');
  await fs.writeFile(path.join(root, 'docs-extra.md'), 'x');
  const config = { get: (k: string) => (k === 'WORKSPACE_ROOT' ? ws : undefined), list: () => [] } as unknown as AppConfigService;
  tool = new ListFilesTool(config);
});

afterAll(() => fs.rm(ws, { recursive: true, force: true }));

describe('list_files', () => {
  it('lists one folder, sorted, with types and file sizes', async () => {
    expect(await list({})).toEqual({
      path: '.',
      recursive: false,
      truncated: false,
      entries: [
        { path: '.git', type: 'directory' },
        { path: 'a.md', type: 'file', size: 1 },
        { path: 'b.txt', type: 'file', size: 2 },
        { path: 'docs', type: 'directory' },
        { path: 'docs-extra.md', type: 'file', size: 1 },
        { path: 'empty', type: 'directory' },
      ],
    });
  });

  it('lists recursively in tree order, without descending into .git', async () => {
    const out = await list({ recursive: true });
    expect(out.entries.map((e) => e.path)).toEqual(['.git', 'a.md', 'b.txt', 'docs', 'docs/guides', 'docs/guides/setup.md', 'docs/intro.md', 'docs-extra.md', 'empty']);
    expect(out.truncated).toBe(false);
  });

  it('lists a sub-folder with paths relative to the project folder', async () => {
    const out = await list({ path: 'docs/', recursive: true });
    expect(out.path).toBe('docs');
    expect(out.entries.map((e) => e.path)).toEqual(['docs/guides', 'docs/guides/setup.md', 'docs/intro.md']);
  });

  it('says when a folder is empty', async () => {
    expect(await list({ path: 'empty' })).toMatchObject({ entries: [], note: 'The folder is empty.' });
  });

  it('lists a project without a folder as empty, with a note', async () => {
    expect(await list({}, 'fresh-project')).toEqual({ path: '.', recursive: false, entries: [], truncated: false, note: expect.stringMatching(/does not exist yet/) });
    await expect(fs.stat(path.join(ws, 'fresh-project'))).rejects.toMatchObject({ code: 'ENOENT' }); // not created
  });

  it.each([
    ['a missing folder', 'nope', /^not found/],
    ['a file', 'a.md', /is a file, not a folder; use read_file/],
  ])('refuses %s', async (_label, p, message) => {
    const outcome = String(message) === String(/^not found/) ? 'exception' : 'validation_error';
    await expect(list({ path: p })).rejects.toMatchObject({ outcome, message: expect.stringMatching(message) });
  });

  it('refuses a sub-path of a project without a folder', async () => {
    await expect(list({ path: 'docs' }, 'fresh-project')).rejects.toMatchObject({ outcome: 'exception', message: expect.stringMatching(/^not found/) });
  });

  it(`stops at ${LIST_MAX_ENTRIES} entries`, async () => {
    const many = path.join(root, 'many');
    await fs.mkdir(many);
    await Promise.all(Array.from({ length: LIST_MAX_ENTRIES + 5 }, (_, i) => fs.writeFile(path.join(many, `f${String(i).padStart(4, '0')}`), '')));
    try {
      const out = await list({ path: 'many' });
      expect(out.entries).toHaveLength(LIST_MAX_ENTRIES);
      expect(out.truncated).toBe(true);
      expect(out.note).toMatch(/stopped at 1000 entries/);
    } finally {
      await fs.rm(many, { recursive: true });
    }
  });

  it('lets the event loop run during a long recursive listing, and stops there once cancelled', async () => {
    const tree = path.join(root, 'tree');
    for (let d = 0; d < 6; d++) {
      await fs.mkdir(path.join(tree, `d${d}`), { recursive: true });
      await Promise.all(Array.from({ length: 60 }, (_, i) => fs.writeFile(path.join(tree, `d${d}`, `f${i}`), '')));
    }
    try {
      let finished = false;
      let ranDuring = false;
      setImmediate(() => (ranDuring = !finished));
      const whole = (await tool.execute({ path: 'tree', recursive: true }, ctx())).output as ListFilesOutput;
      finished = true;
      expect(whole.entries).toHaveLength(6 + 6 * 60);
      expect(ranDuring).toBe(true);

      const cancel = new AbortController();
      setImmediate(() => cancel.abort());
      await expect(tool.execute({ path: 'tree', recursive: true }, { ...ctx(), signal: cancel.signal })).rejects.toMatchObject({ name: 'AbortError' });
    } finally {
      await fs.rm(tree, { recursive: true });
    }
  });

  it(`does not descend more than ${LIST_MAX_DEPTH} levels`, async () => {
    const segs = Array.from({ length: LIST_MAX_DEPTH + 3 }, (_, i) => `d${i}`);
    await fs.mkdir(path.join(root, 'deep', ...segs), { recursive: true });
    try {
      const out = await list({ path: 'deep', recursive: true });
      const depth = Math.max(...out.entries.map((e) => e.path.split('/').length - 1));
      expect(depth).toBe(LIST_MAX_DEPTH);
      expect(out.truncated).toBe(true);
      expect(out.note).toMatch(/deeper than/);
    } finally {
      await fs.rm(path.join(root, 'deep'), { recursive: true });
    }
  });
});
