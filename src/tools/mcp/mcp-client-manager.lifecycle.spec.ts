import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Test } from '@nestjs/testing';
import {
  everythingServer,
  fakeConfig,
  fixtureServer,
  InMemoryTraceSink,
  processAlive,
  realRegistry,
  toolContext,
  waitFor,
} from '../../../test/support/mcp-test-kit';
import { AppConfigService } from '../../config/app-config.service';
import { TRACE_SINK } from '../../trace/trace-sink.port';
import { ToolRegistryService } from '../tool-registry.service';
import { ToolsException, ToolsExceptionCode } from '../tools.exception';
import { MCP_MANAGER_OPTIONS, McpClientManagerService, type McpManagerOptions } from './mcp-client-manager.service';
import type { McpServerConfig } from './mcp-config';

/** Crashes, reconnects, failing servers, config errors and Nest wiring. */
describe('McpClientManagerService lifecycle', () => {
  const managers: McpClientManagerService[] = [];
  afterEach(async () => {
    await Promise.all(managers.splice(0).map((m) => m.close()));
  });

  function setup(servers: McpServerConfig[], options: Partial<McpManagerOptions> = {}, env: Record<string, unknown> = {}) {
    const trace = new InMemoryTraceSink();
    const config = fakeConfig(env);
    const registry = realRegistry(trace, config);
    const manager = new McpClientManagerService(config, registry, trace, {
      servers,
      initialBackoffMs: 300,
      maxBackoffMs: 1_000,
      ...options,
    });
    managers.push(manager);
    return { trace, registry, manager, status: (name: string) => manager.servers().find((s) => s.name === name)! };
  }

  it('a killed child turns its tools unavailable, then reconnects with back-off and re-lists', async () => {
    const { trace, registry, manager, status } = setup([everythingServer('ev')]);
    await manager.start();
    const echo = registry.get('ev__echo')!;
    const pid = manager.childPid('ev')!;
    expect(await echo.isAvailable()).toBe(true);

    process.kill(pid, 'SIGKILL');
    await waitFor(() => status('ev').status === 'failed', 5_000, 'failed status');
    expect(await echo.isAvailable()).toBe(false);
    expect((await registry.summaries()).find((t) => t.name === 'ev__echo')).toMatchObject({ available: false });
    await expect(echo.execute({ message: 'x' }, toolContext())).rejects.toMatchObject({ outcome: 'unavailable' });
    expect(status('ev').lastError).toMatch(/connection closed/);

    await waitFor(() => status('ev').status === 'connected', 5_000, 'reconnect');
    expect(manager.childPid('ev')).not.toBe(pid);
    expect(processAlive(pid)).toBe(false);
    expect(registry.get('ev__echo')).toBe(echo); // same definition: not unregistered, not re-registered
    await expect(echo.execute({ message: 'back' }, toolContext())).resolves.toEqual({ output: { content: [{ type: 'text', text: 'Echo: back' }] } });
    expect(trace.ofType('tool_unregistered')).toEqual([]);
    expect(trace.ofType('mcp_server_status').map((e) => e.details?.status)).toEqual(['connected', 'failed', 'connected']);
  });

  it('a server that exits during a call fails the call as unavailable and keeps its stderr for lastError', async () => {
    const { registry, manager, status } = setup([fixtureServer('fx')]);
    await manager.start();
    await expect(registry.get('fx__crash')!.execute({}, toolContext())).rejects.toMatchObject({ outcome: 'unavailable' });
    await waitFor(() => status('fx').lastError, 2_000, 'lastError');
    expect(status('fx').lastError).toContain('fixture: crashing on purpose');
    await waitFor(() => status('fx').status === 'connected', 5_000, 'reconnect');
    expect(await registry.get('fx__fail')!.isAvailable()).toBe(true);
  });

  it('a server that cannot start is failed, retried with back-off, and stopped by close()', async () => {
    // a fake clock: the back-off timers run only when the test moves time on, so "no retry after
    // close()" is checked by running every timer still pending rather than by waiting
    jest.useFakeTimers({ doNotFake: ['nextTick', 'setImmediate', 'queueMicrotask'] });
    try {
      const { trace, manager, status } = setup(
        [{ name: 'ghost', transport: 'stdio', command: '/nonexistent/mcp-server', args: [], env: {} }],
        { initialBackoffMs: 50, maxBackoffMs: 100 },
      );
      await manager.start();
      expect(status('ghost')).toMatchObject({ status: 'failed', toolCount: 0, lastError: expect.stringMatching(/ENOENT/) });
      // each step passes the longest back-off; the spawn error of the retry arrives on a later tick
      while (trace.ofType('mcp_server_status').length < 3) {
        await jest.advanceTimersByTimeAsync(100);
        await new Promise((r) => setImmediate(r));
      }
      await manager.close();
      const count = trace.ofType('mcp_server_status').length;
      // every timer due within ten times the longest back-off runs: a retry still scheduled would run here
      await jest.advanceTimersByTimeAsync(1_000);
      await new Promise((r) => setImmediate(r));
      expect(trace.ofType('mcp_server_status')).toHaveLength(count); // and none ran after close
      expect(status('ghost').status).toBe('closed');
    } finally {
      jest.useRealTimers();
    }
  });

  it('a server that never answers initialize times out and does not hold up start-up beyond startupWaitMs', async () => {
    const { manager, status } = setup(
      // reads stdin but never answers; exits when stdin closes, as stdio servers do
      [{ name: 'mute', transport: 'stdio', command: process.execPath, args: ['-e', "process.stdin.resume().on('end', () => process.exit(0))"], env: {} }],
      { connectTimeoutMs: 300, startupWaitMs: 100 },
    );
    await manager.start();
    // start() returned while the server was still connecting: it did not wait out the 300 ms connect timeout
    expect(status('mute').status).toBe('connecting');
    const pid = manager.childPid('mute')!;
    expect(processAlive(pid)).toBe(true);
    await waitFor(() => status('mute').status === 'failed', 3_000, 'initialize timeout');
    expect(status('mute').lastError).toMatch(/timed out/i);
    await manager.close();
    expect(processAlive(pid)).toBe(false);
  });

  describe('MCP_CONFIG', () => {
    let dir: string;
    beforeAll(() => (dir = mkdtempSync(join(tmpdir(), 'orion-mcp-manager-'))));
    afterAll(() => rmSync(dir, { recursive: true, force: true }));

    const fromConfig = (MCP_CONFIG: string) => {
      const trace = new InMemoryTraceSink();
      const config = fakeConfig({ MCP_CONFIG });
      const manager = new McpClientManagerService(config, realRegistry(trace, config), trace);
      managers.push(manager);
      return manager;
    };

    it('stops start-up when the file set by MCP_CONFIG is missing or invalid', async () => {
      const missing = join(dir, 'missing.json');
      await expect(fromConfig(missing).start()).rejects.toThrow(new ToolsException(ToolsExceptionCode.INVALID_MCP_CONFIG, `Invalid MCP config ${missing}:\n  file not found (set by MCP_CONFIG)`));

      const bad = join(dir, 'bad.json');
      writeFileSync(bad, JSON.stringify({ mcpServers: { 'bad__name': { command: 'x' } } }));
      const err = await fromConfig(bad).start().catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ToolsException);
      expect(err).toMatchObject({ code: ToolsExceptionCode.INVALID_MCP_CONFIG, message: expect.stringContaining(bad) });
      expect((err as Error).message).toContain('mcpServers.bad__name: server name must match');
    });

    it('connects the servers of the file', async () => {
      const file = join(dir, 'mcp.json');
      const fx = fixtureServer();
      writeFileSync(file, JSON.stringify({ mcpServers: { fx: { command: fx.command, args: fx.args } } }));
      const manager = fromConfig(file);
      await manager.start();
      expect(manager.servers()).toEqual([{ name: 'fx', transport: 'stdio', status: 'connected', toolCount: 13 }]);
    });
  });

  it('is wired by Nest: onModuleInit connects, close() runs onApplicationShutdown', async () => {
    const trace = new InMemoryTraceSink();
    const moduleRef = await Test.createTestingModule({
      providers: [
        { provide: AppConfigService, useValue: fakeConfig() },
        { provide: TRACE_SINK, useValue: trace },
        { provide: MCP_MANAGER_OPTIONS, useValue: { servers: [fixtureServer('fx')] } },
        ToolRegistryService,
        McpClientManagerService,
      ],
    }).compile();
    const app = await moduleRef.init();
    const manager = app.get(McpClientManagerService);
    expect(manager.servers()[0]).toMatchObject({ name: 'fx', status: 'connected' });
    expect(app.get(ToolRegistryService).get('fx__fail')?.origin).toBe('mcp:fx');
    const pid = manager.childPid('fx')!;
    await app.close();
    expect(manager.servers()[0].status).toBe('closed');
    expect(processAlive(pid)).toBe(false);
  });
});
