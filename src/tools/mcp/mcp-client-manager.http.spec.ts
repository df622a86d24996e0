import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { startHttpMcpServer, startSseMcpServer, type HttpMcpTestServer } from '../../../test/support/mcp-http-server';
import { fakeConfig, InMemoryTraceSink, realRegistry, toolContext, waitFor } from '../../../test/support/mcp-test-kit';
import type { ToolRegistryService } from '../tool-registry.service';
import { McpClientManagerService } from './mcp-client-manager.service';
import { parseMcpConfig } from './mcp-config';

/** Streamable HTTP against an in-process McpServer on 127.0.0.1 (StreamableHTTPServerTransport). */
describe('McpClientManagerService over Streamable HTTP', () => {
  let http: HttpMcpTestServer;
  let trace: InMemoryTraceSink;
  let registry: ToolRegistryService;
  let manager: McpClientManagerService;
  const status = () => manager.servers()[0];

  const tools = (server: McpServer) => {
    server.registerTool('hello', { description: 'Says hello' }, async () => ({ content: [{ type: 'text', text: 'hello over http' }] }));
    server.registerTool('add_late', { description: 'Adds the tool "late"' }, async () => {
      server.registerTool('late', { description: 'Added at run time' }, async () => ({ content: [{ type: 'text', text: 'late' }] }));
      return { content: [{ type: 'text', text: 'ok' }] };
    });
  };

  beforeAll(async () => {
    http = await startHttpMcpServer(tools);
    const servers = parseMcpConfig(
      { mcpServers: { web: { url: http.url, headers: { Authorization: 'Bearer ${MCP_TEST_TOKEN}' } } } },
      { file: 'inline', env: { MCP_TEST_TOKEN: 'tok-123' } },
    );
    trace = new InMemoryTraceSink();
    const config = fakeConfig();
    registry = realRegistry(trace, config);
    manager = new McpClientManagerService(config, registry, trace, { servers, initialBackoffMs: 100, maxBackoffMs: 400 });
    await manager.start();
  });

  afterAll(async () => {
    await manager.close();
    await http.close();
  });

  it('connects, registers namespaced tools and sends the configured headers', async () => {
    expect(status()).toEqual({ name: 'web', transport: 'streamable-http', status: 'connected', toolCount: 2 });
    expect(registry.get('web__hello')).toMatchObject({ origin: 'mcp:web', description: 'Says hello' });
    expect(await registry.get('web__hello')!.execute({}, toolContext())).toEqual({ output: { content: [{ type: 'text', text: 'hello over http' }] } });
    expect(http.requests.length).toBeGreaterThan(0);
    expect(http.requests.every((h) => h.authorization === 'Bearer tok-123')).toBe(true);
  });

  it('follows tools/list_changed over the session stream', async () => {
    await registry.get('web__add_late')!.execute({}, toolContext());
    await waitFor(() => registry.get('web__late'), 5_000, 'web__late');
    expect(status().toolCount).toBe(3);
  });

  it('marks a vanished server unavailable and reconnects when it is back', async () => {
    const port = http.port;
    await http.close();
    const hello = registry.get('web__hello')!;
    await expect(hello.execute({}, toolContext())).rejects.toMatchObject({ outcome: 'unavailable' });
    expect(status().status).not.toBe('connected');
    expect(await hello.isAvailable()).toBe(false);

    http = await startHttpMcpServer(tools, port);
    await waitFor(() => status().status === 'connected', 5_000, 'reconnect');
    await expect(hello.execute({}, toolContext())).resolves.toEqual({ output: { content: [{ type: 'text', text: 'hello over http' }] } });
    // the new session has no "late" tool: re-listing removed it
    expect(registry.get('web__late')).toBeUndefined();
    expect(trace.ofType('tool_unregistered').map((e) => e.details?.name)).toEqual(['web__late']);
  });

  it('notices a vanished server without a call once its event stream cannot be re-opened', async () => {
    const port = http.port;
    await http.close();
    // the SDK retries the session's GET stream twice (1 s, then 1.5 s) before giving up
    await waitFor(() => status().status !== 'connected', 8_000, 'failure');
    expect(status().lastError).toMatch(/event stream lost|fetch failed/);
    http = await startHttpMcpServer(tools, port);
    await waitFor(() => status().status === 'connected', 5_000, 'reconnect');
  });
});

describe('McpClientManagerService over the deprecated HTTP+SSE transport', () => {
  it('connects with type "sse", sends the headers and calls tools', async () => {
    const sse = await startSseMcpServer((server) =>
      server.registerTool('ping', { description: 'Pong' }, async () => ({ content: [{ type: 'text', text: 'pong' }] })),
    );
    const servers = parseMcpConfig({ mcpServers: { old: { type: 'sse', url: sse.url, headers: { 'X-Team': 'orion' } } } }, { file: 'inline' });
    const trace = new InMemoryTraceSink();
    const config = fakeConfig();
    const registry = realRegistry(trace, config);
    const manager = new McpClientManagerService(config, registry, trace, { servers });
    try {
      await manager.start();
      expect(manager.servers()).toEqual([{ name: 'old', transport: 'sse', status: 'connected', toolCount: 1 }]);
      expect(await registry.get('old__ping')!.execute({}, toolContext())).toEqual({ output: { content: [{ type: 'text', text: 'pong' }] } });
      expect(sse.requests.every((h) => h['x-team'] === 'orion')).toBe(true);
    } finally {
      await manager.close();
      await sse.close();
    }
  });
});
