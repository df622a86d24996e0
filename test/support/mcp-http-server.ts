import { randomUUID } from 'node:crypto';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { SSEServerTransport } from '@modelcontextprotocol/sdk/server/sse.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';

export interface HttpMcpTestServer {
  url: string;
  port: number;
  /** headers of every HTTP request received */
  requests: IncomingHttpHeaders[];
  /** one McpServer per session */
  servers: McpServer[];
  close(): Promise<void>;
}

/**
 * An in-process Streamable HTTP MCP server on 127.0.0.1 (port 0 unless given), stateful: one McpServer
 * (built by `setup`) per session, so `notifications/tools/list_changed` reaches the client over its GET stream.
 */
export async function startHttpMcpServer(setup: (server: McpServer) => void, port = 0): Promise<HttpMcpTestServer> {
  const transports = new Map<string, StreamableHTTPServerTransport>();
  const servers: McpServer[] = [];
  const requests: IncomingHttpHeaders[] = [];
  const http = createServer((req, res) => {
    requests.push(req.headers);
    void (async () => {
      const sessionId = req.headers['mcp-session-id'];
      let transport = typeof sessionId === 'string' ? transports.get(sessionId) : undefined;
      if (!transport && typeof sessionId === 'string') {
        res.writeHead(404, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32001, message: 'Session not found' }, id: null }));
        return;
      }
      if (!transport) {
        const created = new StreamableHTTPServerTransport({
          sessionIdGenerator: () => randomUUID(),
          onsessioninitialized: (id) => void transports.set(id, created),
        });
        const server = new McpServer({ name: 'orion-http-fixture', version: '1.0.0' }, { capabilities: { tools: { listChanged: true } } });
        setup(server);
        servers.push(server);
        await server.connect(created);
        transport = created;
      }
      await transport.handleRequest(req, res);
    })().catch((err: Error) => {
      if (!res.headersSent) res.writeHead(500);
      res.end(err.message);
    });
  });
  await new Promise<void>((resolve) => http.listen(port, '127.0.0.1', resolve));
  const actual = (http.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${actual}/mcp`,
    port: actual,
    requests,
    servers,
    close: async () => {
      await Promise.all(servers.map((s) => s.close().catch(() => undefined)));
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}

/**
 * The deprecated HTTP+SSE transport: `GET /sse` opens a session stream, `POST /messages?sessionId=`
 * carries the client's messages. One McpServer per session, as above.
 */
export async function startSseMcpServer(setup: (server: McpServer) => void): Promise<HttpMcpTestServer> {
  const transports = new Map<string, SSEServerTransport>();
  const servers: McpServer[] = [];
  const requests: IncomingHttpHeaders[] = [];
  const http = createServer((req, res) => {
    requests.push(req.headers);
    void (async () => {
      const url = new URL(req.url ?? '/', 'http://127.0.0.1');
      if (req.method === 'GET' && url.pathname === '/sse') {
        const transport = new SSEServerTransport('/messages', res);
        transports.set(transport.sessionId, transport);
        const server = new McpServer({ name: 'orion-sse-fixture', version: '1.0.0' });
        setup(server);
        servers.push(server);
        await server.connect(transport);
        return;
      }
      const transport = transports.get(url.searchParams.get('sessionId') ?? '');
      if (req.method === 'POST' && url.pathname === '/messages' && transport) {
        await transport.handlePostMessage(req, res);
        return;
      }
      res.writeHead(404).end();
    })().catch((err: Error) => {
      if (!res.headersSent) res.writeHead(500);
      res.end(err.message);
    });
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const port = (http.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/sse`,
    port,
    requests,
    servers,
    close: async () => {
      await Promise.all(servers.map((s) => s.close().catch(() => undefined)));
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}
