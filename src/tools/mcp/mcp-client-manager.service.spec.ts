import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  everythingServer,
  fakeConfig,
  filesystemServer,
  fixtureServer,
  InMemoryTraceSink,
  processAlive,
  realRegistry,
  toolContext,
  waitFor,
} from '../../../test/support/mcp-test-kit';
import { ToolFailure, type ToolDefinition } from '../tool-definition';
import type { ToolRegistryService } from '../tool-registry.service';
import { McpClientManagerService } from './mcp-client-manager.service';
import { ToolApprovalPolicy } from '../approval/approval-policy';
import type { McpToolOutput } from './mcp-result.mapper';

/**
 * The manager against the real @modelcontextprotocol/server-everything and server-filesystem plus
 * test/fixtures/mcp/fixture-server.mjs, all over stdio, sharing one manager (about 1 s to start).
 */
describe('McpClientManagerService over stdio (real servers)', () => {
  const SECRETS = { LLM_API_KEY: 'sk-orion-test-secret-000000', API_KEYS: 'orion-api-key-1', DATABASE_URL: 'postgres://u:p@db/orion' };
  const saved: Record<string, string | undefined> = {};
  let root: string;
  let trace: InMemoryTraceSink;
  let registry: ToolRegistryService;
  let manager: McpClientManagerService;
  const builtinReadFile: ToolDefinition = {
    name: 'read_file',
    description: 'built-in read_file',
    parameters: { type: 'object', properties: { path: { type: 'string' } } },
    origin: 'builtin',
    isAvailable: () => true,
    execute: async () => ({ output: 'built-in' }),
  };

  const tool = (name: string) => {
    const def = registry.get(name);
    if (!def) throw new Error(`tool ${name} is not registered; have ${registry.all().map((t) => t.name).join(', ')}`);
    return def;
  };
  const run = async (name: string, args: Record<string, unknown> = {}, signal?: AbortSignal) =>
    tool(name).execute(args, toolContext(signal)) as Promise<{ output: McpToolOutput; isError?: boolean }>;
  const text = (output: McpToolOutput) => output.content?.map((b) => (b as { text?: string }).text ?? '').join('\n') ?? '';

  beforeAll(async () => {
    for (const [k, v] of Object.entries(SECRETS)) {
      saved[k] = process.env[k];
      process.env[k] = v;
    }
    root = mkdtempSync(join(tmpdir(), 'orion-mcp-fs-'));
    writeFileSync(join(root, 'notes.txt'), 'hello from the workspace\n');
    const config = fakeConfig({ TOOL_RESULT_MAX_BYTES: 8_192 });
    trace = new InMemoryTraceSink();
    registry = realRegistry(trace, config);
    registry.register(builtinReadFile);
    manager = new McpClientManagerService(config, registry, trace, {
      servers: [everythingServer('everything', { ORION_MCP_MARK: 'passed-through' }), filesystemServer(root), fixtureServer('fx')],
    });
    await manager.start();
  });

  afterAll(async () => {
    await manager.close();
    rmSync(root, { recursive: true, force: true });
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  });

  it('connects every server and reports its status', () => {
    const servers = manager.servers();
    expect(servers.map(({ name, transport, status }) => ({ name, transport, status }))).toEqual([
      { name: 'everything', transport: 'stdio', status: 'connected' },
      { name: 'fs', transport: 'stdio', status: 'connected' },
      { name: 'fx', transport: 'stdio', status: 'connected' },
    ]);
    expect(servers.find((s) => s.name === 'fs')!.toolCount).toBe(registry.all().filter((t) => t.origin === 'mcp:fs').length);
    expect(servers.find((s) => s.name === 'fx')!.toolCount).toBe(13); // 14 tools, one collision
    expect(trace.ofType('mcp_server_status').map((e) => e.details?.status)).toEqual(['connected', 'connected', 'connected']);
  });

  it('registers tools as <server>__<tool> with origin, description and schema', () => {
    expect(tool('everything__echo')).toMatchObject({
      origin: 'mcp:everything',
      action: 'echo',
      description: 'Echoes back the input string',
      parameters: { type: 'object', properties: { message: { type: 'string', description: 'Message to echo' } }, required: ['message'] },
    });
    expect(tool('everything__echo').parameters).not.toHaveProperty('$schema');
    expect(tool('fx__add_tool').parameters).toEqual({ type: 'object', properties: {} });
    const registrations = trace.ofType('tool_registration').map((e) => e.details?.name);
    expect(registrations).toEqual(expect.arrayContaining(['everything__echo', 'fs__read_text_file', 'fx__crash']));
  });

  it('never lets a server tool shadow a built-in: fs read_file becomes fs__read_file', () => {
    expect(registry.get('read_file')).toBe(builtinReadFile);
    expect(tool('fs__read_file').origin).toBe('mcp:fs');
  });

  it('sanitizes names, caps them at 64 characters and skips collisions', () => {
    expect(tool('fx__dup_tool').action).toBe('dup.tool'); // listed first, wins
    expect(trace.ofType('mcp_tool_skipped')).toEqual([
      { type: 'mcp_tool_skipped', details: { server: 'fx', tool: 'dup_tool', reason: 'its name collides with dup.tool as fx__dup_tool' } },
    ]);
    const long = registry.all().find((t) => t.action === 'x'.repeat(70))!;
    expect(long.name).toHaveLength(64);
    expect(long.name).toMatch(/^fx__x+_[0-9a-f]{8}$/);
  });

  it('lists and reads files through server-filesystem', async () => {
    const listing = await run('fs__list_directory', { path: root });
    expect(listing.output).toEqual({ structuredContent: { content: expect.stringContaining('[FILE] notes.txt') } });
    const file = await run('fs__read_text_file', { path: join(root, 'notes.txt') });
    expect(file).toEqual({ output: { structuredContent: { content: 'hello from the workspace\n' } } });
    const outside = await run('fs__read_text_file', { path: '/etc/hostname' });
    expect(outside.isError).toBe(true);
    expect(text(outside.output)).toMatch(/Access denied/);
  });

  it("carries server-filesystem's annotations into hints: its write tools wait under TOOLS_APPROVAL_DEFAULT=destructive, its read tools do not", () => {
    expect(tool('fs__write_file').hints).toEqual({ readOnly: false, destructive: true });
    expect(tool('fs__read_text_file').hints).toEqual({ readOnly: true });
    const policy = new ToolApprovalPolicy([], 'destructive');
    expect(policy.of(tool('fs__write_file'))).toEqual({ required: true, reason: 'destructive' });
    expect(policy.of(tool('fs__move_file'))).toEqual({ required: true, reason: 'destructive' });
    // not destructive, but not read-only either: it changes the disk, so it waits too
    expect(policy.of(tool('fs__create_directory'))).toEqual({ required: true, reason: 'not_read_only' });
    expect(policy.of(tool('fs__read_text_file'))).toEqual({ required: false, reason: 'none' });
    expect(policy.of(tool('fs__list_directory'))).toEqual({ required: false, reason: 'none' });
  });

  it('calls server-everything echo and get-sum', async () => {
    expect(await run('everything__echo', { message: 'hi' })).toEqual({ output: { content: [{ type: 'text', text: 'Echo: hi' }] } });
    expect(text((await run('everything__get-sum', { a: 2, b: 3 })).output)).toBe('The sum of 2 and 3 is 5.');
  });

  it('returns isError results as tool errors', async () => {
    expect(await run('fx__fail')).toEqual({ output: { content: [{ type: 'text', text: 'something went wrong on purpose' }] }, isError: true });
    const invalid = await run('everything__get-sum', { a: 1, b: 'two' });
    expect(invalid.isError).toBe(true);
    expect(text(invalid.output)).toMatch(/Input validation error/);
  });

  it('summarizes images and keeps structured content', async () => {
    const image = await run('everything__get-tiny-image');
    expect(image.output.content).toEqual([
      { type: 'text', text: "Here's the image you requested:" },
      { type: 'image', mimeType: 'image/png', bytes: expect.any(Number), note: 'image data omitted' },
      { type: 'text', text: 'The image above is the MCP logo.' },
    ]);
    expect(JSON.stringify(image.output)).not.toContain('iVBORw0KGgo');
    const weather = await run('everything__get-structured-content', { location: 'Chicago' });
    expect(weather.output).toEqual({ structuredContent: { temperature: expect.any(Number), conditions: expect.any(String), humidity: expect.any(Number) } });
    const mixed = await run('fx__mixed');
    expect(mixed.output.content!.map((b) => b.type)).toEqual(['text', 'image', 'resource', 'resource', 'resource_link']);
  });

  it('caps large results at TOOL_RESULT_MAX_BYTES', async () => {
    const { output } = await run('fx__big', { size: 50_000 });
    expect(output.truncated).toBe(true);
    expect(output.originalBytes).toBeGreaterThan(50_000);
    expect(Buffer.byteLength(JSON.stringify(output))).toBeLessThanOrEqual(8_192);
  });

  it('gives a stdio child only allow-listed variables plus its configured env', async () => {
    const env = JSON.parse(text((await run('everything__get-env')).output)) as Record<string, string>;
    expect(env.ORION_MCP_MARK).toBe('passed-through');
    expect(env.PATH).toBe(process.env.PATH);
    for (const name of Object.keys(SECRETS)) expect(env).not.toHaveProperty(name);
    expect(JSON.stringify(env)).not.toContain(SECRETS.LLM_API_KEY);
    expect(env).not.toHaveProperty('NODE_OPTIONS');
    expect(env).not.toHaveProperty('JEST_WORKER_ID');
  });

  it('follows notifications/tools/list_changed: additions, changes and removals', async () => {
    await run('fx__add_tool');
    await waitFor(() => registry.get('fx__added_tool'), 5_000, 'fx__added_tool');
    expect((await run('fx__added_tool')).output).toEqual({ content: [{ type: 'text', text: 'added tool ran' }] });
    expect(trace.ofType('tool_registration').filter((e) => e.details?.name === 'fx__added_tool')).toHaveLength(1);

    await run('fx__change_description');
    await waitFor(() => registry.get('fx__described')?.description === 'version 2', 5_000, 'new description');
    expect(trace.ofType('tool_definition_changed').map((e) => e.details?.name)).toEqual(['fx__described']);

    await run('fx__remove_tool');
    await waitFor(() => !registry.get('fx__added_tool'), 5_000, 'removal');
    expect(trace.ofType('tool_unregistered').map((e) => e.details?.name)).toEqual(['fx__added_tool']);
    // re-listing did not re-register unchanged tools
    expect(trace.ofType('tool_registration').filter((e) => e.details?.name === 'fx__crash')).toHaveLength(1);
    expect(manager.servers().find((s) => s.name === 'fx')!.toolCount).toBe(13);
  });

  it('maps the signal: a timeout is ToolFailure(timeout), a cancellation stays an abort', async () => {
    // the tool would answer after 10 s: a failure, not its answer, shows the call was cut at the signal
    const timedOut = await run('fx__slow', { ms: 10_000 }, AbortSignal.timeout(200)).catch((e: unknown) => e);
    expect(timedOut).toBeInstanceOf(ToolFailure);
    expect(timedOut).toMatchObject({ outcome: 'timeout' });

    const controller = new AbortController();
    setTimeout(() => controller.abort(), 100);
    await expect(run('fx__slow', { ms: 10_000 }, controller.signal)).rejects.toMatchObject({ name: 'AbortError' });
    // the server is still fine afterwards
    expect((await run('fx__slow', { ms: 1 })).output).toEqual({ content: [{ type: 'text', text: 'slept' }] });
  });

  it('close() ends every child process and leaves the tools registered but unavailable', async () => {
    const pids = ['everything', 'fs', 'fx'].map((s) => manager.childPid(s)!);
    expect(pids.every((pid) => processAlive(pid))).toBe(true);
    await manager.close();
    expect(pids.filter((pid) => processAlive(pid))).toEqual([]);
    expect(manager.servers().map((s) => s.status)).toEqual(['closed', 'closed', 'closed']);
    expect(await tool('everything__echo').isAvailable()).toBe(false);
    await expect(run('everything__echo', { message: 'x' })).rejects.toMatchObject({ outcome: 'unavailable' });
  });
});
