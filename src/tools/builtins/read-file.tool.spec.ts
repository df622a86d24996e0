import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { AppConfigService } from '../../config/app-config.service';
import type { TraceSink } from '../../trace/trace-sink.port';
import type { ToolExecutionContext } from '../tool-definition';
import { ToolRegistryService } from '../tool-registry.service';
import { ToolRunnerService } from '../tool-runner.service';
import { READ_DEFAULT_MAX_BYTES, ReadFileTool, type ReadFileOutput } from './read-file.tool';

let ws: string;
let root: string;
let config: AppConfigService;
let tool: ReadFileTool;

const ctx = (projectId = 'proj', signal = new AbortController().signal): ToolExecutionContext => ({ projectId, requestId: 'r', signal });
const read = async (args: Record<string, unknown>, projectId = 'proj') =>
  (await tool.execute({ maxBytes: READ_DEFAULT_MAX_BYTES, ...args }, ctx(projectId))).output as ReadFileOutput;

beforeAll(async () => {
  ws = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), 'orion-read-')));
  root = path.join(ws, 'proj');
  await fs.mkdir(path.join(root, 'docs'), { recursive: true });
  await fs.writeFile(path.join(root, 'docs', 'readme.md'), '# Title\nbody\n');
  await fs.writeFile(path.join(root, 'hundred.txt'), 'x'.repeat(100));
  await fs.writeFile(path.join(root, 'accents.txt'), 'ééé');
  await fs.writeFile(path.join(root, 'empty.txt'), '');
  await fs.writeFile(path.join(root, 'binary.bin'), Buffer.from([0x50, 0x4b, 0x03, 0x04, 0x00, 0x00, 0x41]));
  await fs.writeFile(path.join(root, 'late-nul.bin'), Buffer.concat([Buffer.alloc(100, 0x61), Buffer.from([0]), Buffer.alloc(10, 0x61)]));
  await fs.writeFile(path.join(root, 'nul-after-8k.txt'), Buffer.concat([Buffer.alloc(9000, 0x61), Buffer.from([0])]));
  await fs.writeFile(path.join(root, 'big.txt'), 'line of text\n'.repeat(10_000));
  config = { get: (k: string) => ({ WORKSPACE_ROOT: ws, TOOL_TIMEOUT_MS: 5000, TOOL_RESULT_MAX_BYTES: 65536 } as Record<string, unknown>)[k], list: () => [] } as unknown as AppConfigService;
  tool = new ReadFileTool(config);
});

afterAll(() => fs.rm(ws, { recursive: true, force: true }));

describe('read_file', () => {
  it('reads a text file', async () => {
    expect(await read({ path: 'docs/readme.md' })).toEqual({ path: 'docs/readme.md', size: 13, bytes: 13, truncated: false, content: '# Title\nbody\n' });
  });

  it('reads at most maxBytes and says so', async () => {
    const out = await read({ path: 'hundred.txt', maxBytes: 10 });
    expect(out).toMatchObject({ content: 'x'.repeat(10), bytes: 10, size: 100, truncated: true });
    expect(out.note).toMatch(/first 10 of 100 bytes/);
    expect(out.note).toMatch(/larger maxBytes/);
    expect(Object.keys(out)).toEqual(['path', 'size', 'bytes', 'truncated', 'note', 'content']); // note before content survives a cut
  });

  it('is not truncated when the file is exactly maxBytes long', async () => {
    expect(await read({ path: 'hundred.txt', maxBytes: 100 })).toMatchObject({ truncated: false, bytes: 100 });
  });

  it('never splits a UTF-8 character', async () => {
    const out = await read({ path: 'accents.txt', maxBytes: 3 });
    expect(out.content).toBe('é');
    expect(out.bytes).toBe(2);
    expect(out.truncated).toBe(true);
  });

  it('reads an empty file', async () => {
    expect(await read({ path: 'empty.txt' })).toMatchObject({ content: '', size: 0, truncated: false });
  });

  it.each([
    ['a folder', 'docs', /is a folder; use list_files/],
    ['the project folder', '.', /is a folder/],
    ['a binary file', 'binary.bin', /binary file/],
    ['a binary file whose NUL lies past maxBytes', 'late-nul.bin', /binary file/],
    ['a missing file', 'docs/nope.md', /^not found/],
    ['a path below a file', 'hundred.txt/x', /^not found/],
  ])('refuses %s', async (_label, p, message) => {
    // a path that names nothing is an exception-class outcome; a path that is not allowed, invalid
    const outcome = String(message) === String(/^not found/) ? 'exception' : 'validation_error';
    await expect(read({ path: p, maxBytes: 10 })).rejects.toMatchObject({ name: 'ToolFailure', outcome, message: expect.stringMatching(message) });
  });

  it('reads a file whose first NUL is beyond the first 8 KB', async () => {
    expect((await read({ path: 'nul-after-8k.txt', maxBytes: 100 })).truncated).toBe(true);
  });

  it('reports "not found" when the project folder does not exist', async () => {
    await expect(read({ path: 'readme.md' }, 'no-such-project')).rejects.toMatchObject({ outcome: 'exception', message: expect.stringMatching(/^not found/) });
  });

  it('stops when the signal is aborted', async () => {
    const c = new AbortController();
    c.abort();
    await expect(tool.execute({ path: 'docs/readme.md', maxBytes: 10 }, ctx('proj', c.signal))).rejects.toBeDefined();
  });

  describe('through the runner', () => {
    const trace: TraceSink = { record: () => undefined, flush: async () => undefined };
    let runner: ToolRunnerService;
    beforeAll(() => {
      const registry = new ToolRegistryService(config, trace);
      registry.register(tool);
      runner = new ToolRunnerService(registry, config, trace);
    });
    const run = (args: string) => runner.run({ name: 'read_file', arguments: args }, ctx());

    it('applies the maxBytes default', async () => {
      const r = await run('{"path":"docs/readme.md"}');
      expect(r.outcome).toBe('success');
      expect(r.args).toEqual({ path: 'docs/readme.md', maxBytes: 65536 });
    });

    it.each(['{"path":"a","maxBytes":0}', '{"path":"a","maxBytes":2000000}', '{"path":"a","maxBytes":"10"}', '{"path":"a","maxBytes":1.5}', '{}', '{"path":""}', '{"path":"a","extra":1}'])(
      'refuses bad arguments %s',
      async (args) => {
        const r = await run(args);
        expect(r.outcome).toBe('validation_error');
        expect(r.outputText).toContain('"parameters"');
      },
    );

    it('keeps a large read under TOOL_RESULT_MAX_BYTES', async () => {
      const r = await run('{"path":"big.txt","maxBytes":200000}');
      expect(r.outcome).toBe('success');
      expect(r.truncated).toBe(true);
      expect(Buffer.byteLength(r.outputText)).toBeLessThanOrEqual(65536);
      const partial = (JSON.parse(r.outputText) as { partial: string }).partial;
      expect(partial).toMatch(/^\{"path":"big.txt","size":130000,"bytes":200000|^\{"path":"big.txt","size":130000,"bytes":130000/);
    });
  });
});

describe('read_file and hard links', () => {
  it('refuses a hard link to a file outside the workspace, unless FILE_ALLOW_HARDLINKS', async () => {
    const outside = await fs.mkdtemp(path.join(os.tmpdir(), 'orion-outside-'));
    await fs.writeFile(path.join(outside, 'secret.txt'), 'TOP-SECRET');
    await fs.link(path.join(outside, 'secret.txt'), path.join(root, 'innocent.txt'));
    await expect(read({ path: 'innocent.txt' })).rejects.toMatchObject({ outcome: 'validation_error', message: expect.stringMatching(/hard links/) });
    const allowing = new ReadFileTool({ get: (k: string) => (k === 'FILE_ALLOW_HARDLINKS' ? true : config.get(k as never)) } as unknown as AppConfigService);
    expect(((await allowing.execute({ path: 'innocent.txt', maxBytes: 100 }, ctx())).output as ReadFileOutput).content).toBe('TOP-SECRET');
    await fs.rm(outside, { recursive: true, force: true });
    await fs.rm(path.join(root, 'innocent.txt'));
  });
});
