import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * Local HTTP servers for the web-tool specs (this machine has loopback only).
 * - `startCanary()`: a server that must never be reached; it counts every TCP connection
 *   and every request, on 127.0.0.1 and (when available) on [::1] at the same port.
 * - `startTestServer(handler)`: an ordinary server the specs allow-list by `127.0.0.1:port`.
 */

export interface TestServer {
  port: number;
  /** `http://127.0.0.1:<port>` */
  origin: string;
  /** `127.0.0.1:<port>`, the FETCH_ALLOW_HOSTS entry that allows exactly this server */
  hostPort: string;
  /** request paths in arrival order */
  requests: string[];
  /** TCP connections accepted so far */
  connections(): number;
  close(): Promise<void>;
}

export interface Canary extends TestServer {
  /** TCP connections plus requests seen, on any of its listeners */
  hits(): number;
}

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

function listen(server: Server, port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve((server.address() as AddressInfo).port);
    });
  });
}

async function closeAll(servers: Server[]): Promise<void> {
  await Promise.all(
    servers.map(
      (s) =>
        new Promise<void>((resolve) => {
          s.closeAllConnections();
          s.close(() => resolve());
        }),
    ),
  );
}

export async function startTestServer(handler: Handler): Promise<TestServer> {
  const requests: string[] = [];
  let connections = 0;
  const server = createServer((req, res) => {
    requests.push(req.url ?? '');
    handler(req, res);
  });
  server.on('connection', () => connections++);
  const port = await listen(server, 0, '127.0.0.1');
  return {
    port,
    origin: `http://127.0.0.1:${port}`,
    hostPort: `127.0.0.1:${port}`,
    requests,
    connections: () => connections,
    close: () => closeAll([server]),
  };
}

export async function startCanary(): Promise<Canary> {
  let connections = 0;
  const requests: string[] = [];
  const make = () => {
    const s = createServer((req, res) => {
      requests.push(req.url ?? '');
      res.end('canary reached');
    });
    s.on('connection', () => connections++);
    return s;
  };
  const v4 = make();
  const port = await listen(v4, 0, '127.0.0.1');
  const servers = [v4];
  const v6 = make();
  try {
    await listen(v6, port, '::1');
    servers.push(v6);
  } catch {
    // no IPv6 loopback here, or the port is taken on it: the IPv4 listener still counts
  }
  return {
    port,
    origin: `http://127.0.0.1:${port}`,
    hostPort: `127.0.0.1:${port}`,
    requests,
    connections: () => connections,
    hits: () => connections + requests.length,
    close: () => closeAll(servers),
  };
}
