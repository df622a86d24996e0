import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startApp, type TestApp } from '../support/app';
import { itOnPostgres } from '../support/db';
import { filesystemServer, waitFor, waitForTool } from '../support/mcp-test-kit';
import { ReplayServer, respond } from '../support/replay-server';

/**
 * Issue 32 (items 1 and 6) over real HTTP: the approval policy with the real
 * @modelcontextprotocol/server-filesystem (its write tools annotated destructive, its read tools
 * read-only), the projects' override set by the admin route, GET /api/tools, and the tool-only
 * route that never runs a call needing a person unless the request carries its approval.
 */
describe('tool approvals: policy, project override, tool-only route', () => {
  let llm: ReplayServer;
  let t: TestApp;
  let files: string;
  let scratch: string;

  beforeAll(async () => {
    llm = await ReplayServer.start();
    scratch = join(tmpdir(), `orion-approvals-${process.pid}-${Date.now()}`);
    files = join(scratch, 'files');
    mkdirSync(files, { recursive: true });
    const fs = filesystemServer(files);
    const config = join(scratch, 'mcp.json');
    writeFileSync(config, JSON.stringify({ mcpServers: { fs: { command: fs.command, args: fs.args, env: {} } } }));
    t = await startApp({ LLM_PROVIDER: 'openai', LLM_BASE_URL: llm.openAiBaseUrl, LLM_MODEL: 'scripted-model', MCP_CONFIG: config });
    mkdirSync(join(t.workspace, 'default'), { recursive: true });
    writeFileSync(join(t.workspace, 'default', 'README.md'), '# Colony\n');
    await waitForTool(t.url, 'fs__write_file');
  }, 60_000);
  afterAll(async () => {
    await t?.close();
    await llm?.close();
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  });
  beforeEach(() => llm.reset());

  const json = async (method: string, path: string, body?: unknown, url = t.url) => {
    const res = await fetch(`${url}${path}`, { method, headers: { 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
    return { status: res.status, body: await res.json() };
  };
  const policyOf = async (tool: string, projectId?: string, url = t.url) => {
    const tools: Array<{ name: string; approval: unknown }> = (await json('GET', `/api/tools${projectId ? `?projectId=${projectId}` : ''}`, undefined, url)).body;
    return tools.find((x) => x.name === tool)?.approval;
  };
  const execute = (body: Record<string, unknown>) => json('POST', '/api/orchestration/execute', { mode: 'Classic', ...body });

  it("GET /api/tools shows each tool's policy: server-filesystem's write tools wait, its read tools and the built-ins do not", async () => {
    expect(await policyOf('fs__write_file')).toEqual({ required: true, reason: 'destructive' });
    expect(await policyOf('fs__create_directory')).toEqual({ required: true, reason: 'not_read_only' });
    expect(await policyOf('fs__read_text_file')).toEqual({ required: false, reason: 'none' });
    expect(await policyOf('read_file')).toEqual({ required: false, reason: 'none' });
  });

  it('tool-only: a call that needs approval comes back approval_required with its arguments, and nothing is written', async () => {
    const target = join(files, 'unasked.txt');
    llm.enqueue(respond.turn([{ toolCall: { name: 'fs__write_file', args: { path: target, content: 'overwritten' } } }]));
    const { status, body } = await execute({ userInput: 'write the file' });
    expect(status).toBe(200);
    expect(body.executions).toEqual([
      expect.objectContaining({ toolName: 'fs__write_file', outcome: 'approval_required', isError: true, args: { path: target, content: 'overwritten' }, approval: { required: true, reason: 'destructive' } }),
    ]);
    expect(body).toMatchObject({ isSuccess: true, error: null });
    expect(existsSync(target)).toBe(false);
  });

  it('tool-only: approvedCalls with the same canonical arguments (any key order) run the call without waiting; other arguments still wait', async () => {
    const target = join(files, 'approved.txt');
    const other = join(files, 'other.txt');
    llm.enqueue(respond.turn([{ toolCall: { name: 'fs__write_file', args: { path: target, content: 'yes' } } }]));
    const ok = await execute({ userInput: 'write it', approvedCalls: [{ tool: 'fs__write_file', arguments: { content: 'yes', path: target } }] });
    expect(ok.body.executions[0]).toMatchObject({ toolName: 'fs__write_file', outcome: 'success', isError: false });
    expect(ok.body.executions[0].approval).toBeUndefined();
    expect(readFileSync(target, 'utf8')).toBe('yes');

    llm.enqueue(respond.turn([{ toolCall: { name: 'fs__write_file', args: { path: other, content: 'no' } } }]));
    const refused = await execute({ userInput: 'write the other', approvedCalls: [{ tool: 'fs__write_file', arguments: { path: other, content: 'something else' } }] });
    expect(refused.body.executions[0].outcome).toBe('approval_required');
    expect(existsSync(other)).toBe(false);
  });

  it('tool-only: one approval lets one call run; the same call decided twice waits the second time', async () => {
    const target = join(files, 'twice.txt');
    const call = { toolCall: { name: 'fs__write_file', args: { path: target, content: 'once' } } };
    llm.enqueue(respond.turn([call, call]));
    const { body } = await execute({ userInput: 'write twice', options: { maxCalls: 2 }, approvedCalls: [{ tool: 'fs__write_file', arguments: { path: target, content: 'once' } }] });
    expect(body.executions.map((e: { outcome: string }) => e.outcome)).toEqual(['success', 'approval_required']);
  });

  it.each([
    ['not an array', { approvedCalls: 'all' }, /approvedCalls must be an array/],
    ['no arguments', { approvedCalls: [{ tool: 'fs__write_file' }] }, /"approvedCalls\[0\]\.arguments is required \(a JSON object\)"/],
    ['arguments an array', { approvedCalls: [{ tool: 'fs__write_file', arguments: ['a'] }] }, /"approvedCalls\[0\]\.arguments must be a JSON object/],
    ['a bad tool name', { approvedCalls: [{ tool: '../x', arguments: {} }] }, /tool must be a tool name/],
    ['an unknown field', { approvedCalls: [{ tool: 'x', arguments: {}, extra: 1 }] }, /extra is not allowed \(unknown field/],
    ['21 entries', { approvedCalls: Array.from({ length: 21 }, () => ({ tool: 'x', arguments: {} })) }, /approvedCalls must contain no more than 20/],
  ])('tool-only: a malformed approvedCalls (%s) is a 400 and the model is not asked', async (_label, extra, message) => {
    const { status, body } = await execute({ userInput: 'write', ...extra });
    expect(status).toBe(400);
    expect(JSON.stringify(body)).toMatch(message);
    expect(llm.chatRequests).toHaveLength(0);
  });

  describe('the project override (admin route)', () => {
    const route = (projectId: string) => `/api/admin/projects/${projectId}/tool-approvals`;

    it('a project without one: empty lists, updatedAt null', async () => {
      expect((await json('GET', route('fresh'))).body).toEqual({ projectId: 'fresh', require: [], exempt: [], updatedAt: null, updatedBy: null });
    });

    it.each([
      ['exempt missing', { require: ['read_file'] }, /"exempt is required \(an array\)"/],
      ['a space in a name', { require: ['read file'], exempt: [] }, /each entry must be a tool name or glob/],
      ['a number', { require: [42], exempt: [] }, /require must be a string|each entry must be/],
      ['required and exempt', { require: ['fs__*'], exempt: ['fs__*'] }, /both required and exempt: fs__\*/],
      ['201 entries', { require: Array.from({ length: 201 }, (_, i) => `t${i}`), exempt: [] }, /no more than 200/],
      ['an unknown field', { require: [], exempt: [], extra: true }, /extra is not allowed \(unknown field/],
    ])('bad input (%s) is a 400 and changes nothing', async (_label, body, message) => {
      await json('PUT', route('guarded'), { require: ['read_file'], exempt: [] });
      const res = await json('PUT', route('guarded'), body);
      expect(res.status).toBe(400);
      expect(JSON.stringify(res.body)).toMatch(message);
      expect((await json('GET', route('guarded'))).body).toMatchObject({ require: ['read_file'], exempt: [] });
    });

    it('a malformed project id is a 400', async () => {
      expect((await json('PUT', route('a%20b'), { require: [], exempt: [] })).status).toBe(400);
      expect((await json('GET', route('x'.repeat(65)))).status).toBe(400);
    });

    it("require makes a built-in wait and exempt lets a destructive MCP tool run, in that project only; GET /api/tools and the tool-only route follow it at once", async () => {
      const put = await json('PUT', route('p-strict'), { require: ['read_*'], exempt: ['fs__write*'] });
      expect(put.status).toBe(200);
      expect(put.body).toMatchObject({ projectId: 'p-strict', require: ['read_*'], exempt: ['fs__write*'], updatedBy: 'local (local)' });
      expect(Date.parse(put.body.updatedAt)).not.toBeNaN();
      expect((await json('GET', route('p-strict'))).body).toEqual(put.body);

      expect(await policyOf('read_file', 'p-strict')).toEqual({ required: true, reason: 'project_require' });
      expect(await policyOf('fs__write_file', 'p-strict')).toEqual({ required: false, reason: 'project_exempt' });
      expect(await policyOf('fs__move_file', 'p-strict')).toEqual({ required: true, reason: 'destructive' });
      // another project keeps the configuration
      expect(await policyOf('read_file', 'p-other')).toEqual({ required: false, reason: 'none' });
      expect(await policyOf('fs__write_file', 'p-other')).toEqual({ required: true, reason: 'destructive' });

      mkdirSync(join(t.workspace, 'p-strict'), { recursive: true });
      writeFileSync(join(t.workspace, 'p-strict', 'notes.md'), 'strict\n');
      llm.enqueue(respond.turn([{ toolCall: { name: 'read_file', args: { path: 'notes.md' } } }]));
      const read = await execute({ userInput: 'read notes', projectId: 'p-strict' });
      expect(read.body.executions[0]).toMatchObject({ outcome: 'approval_required', approval: { reason: 'project_require' } });

      const target = join(files, 'exempt.txt');
      llm.enqueue(respond.turn([{ toolCall: { name: 'fs__write_file', args: { path: target, content: 'exempt' } } }]));
      const write = await execute({ userInput: 'write', projectId: 'p-strict' });
      expect(write.body.executions[0].outcome).toBe('success');
      expect(readFileSync(target, 'utf8')).toBe('exempt');

      // cleared: the configuration decides again, on the next call
      await json('PUT', route('p-strict'), { require: [], exempt: [] });
      expect(await policyOf('read_file', 'p-strict')).toEqual({ required: false, reason: 'none' });
    });
  });

  itOnPostgres('two instances share one database through LISTEN/NOTIFY', 'an override set on instance A applies on instance B without waiting for the cache TTL', async () => {
    const b = await startApp({ LLM_PROVIDER: 'openai', LLM_BASE_URL: llm.openAiBaseUrl, LLM_MODEL: 'scripted-model' }, { databaseUrl: t.databaseUrl });
    try {
      // B reads (and caches) the project's state first, so only the NOTIFY can change it within the TTL
      expect(await policyOf('read_file', 'p-shared', b.url)).toEqual({ required: false, reason: 'none' });
      expect((await json('PUT', '/api/admin/projects/p-shared/tool-approvals', { require: ['read_file'], exempt: [] })).status).toBe(200);
      await waitFor(async () => ((await policyOf('read_file', 'p-shared', b.url)) as { required?: boolean })?.required === true, 5_000, 'the override on instance B');
    } finally {
      await b.close();
    }
  });
});
