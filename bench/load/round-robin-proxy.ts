/**
 * The scale-out benchmark's load balancer, in its own process: each incoming request goes to
 * the next backend in turn (PROXY_BACKENDS=port,port,…), its body and the answer streamed both
 * ways. A few lines of node:http rather than a proxy package: the bench needs round-robin and
 * streaming, nothing more, and its cost should stay small and visible.
 */
import { Agent, createServer, request, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

const backends = (process.env.PROXY_BACKENDS ?? '').split(',').map(Number).filter((p) => p > 0);
if (!backends.length) throw new Error('PROXY_BACKENDS: the backend ports, comma-separated');
const agent = new Agent({ keepAlive: true, maxSockets: Infinity });
let next = 0;

/** Hop-by-hop headers belong to one connection, not to the request being passed on. */
function endToEnd(h: IncomingHttpHeaders): IncomingHttpHeaders {
  const { connection: _c, 'keep-alive': _k, 'proxy-connection': _p, upgrade: _u, ...rest } = h;
  return rest;
}

const server = createServer((req, res) => {
  const port = backends[next++ % backends.length];
  let answered = false;
  const up = request({ host: '127.0.0.1', port, path: req.url, method: req.method, headers: endToEnd(req.headers), agent }, (answer) => {
    res.writeHead(answer.statusCode ?? 502, endToEnd(answer.headers));
    answer.pipe(res);
    answer.on('end', () => (answered = true));
  });
  up.on('error', (e) => {
    if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' });
    res.end(`proxy: ${e.message}`);
  });
  // a client that leaves closes the backend's request too (the run sees the disconnect); after a
  // complete answer the socket is back in the pool, maybe serving another request already
  res.on('close', () => {
    if (!answered) up.destroy();
  });
  req.pipe(up);
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => process.send?.({ port: (server.address() as AddressInfo).port }));
