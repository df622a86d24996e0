import { Agent, createServer, request, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { HttpAdapterHost } from '@nestjs/core';
import { CloseIdleOnShutdown } from './close-idle-on-shutdown';
import { scriptedDelay } from '../../../test/support/scripted-delay';
import { waitFor } from '../../../test/support/wait-for';

/**
 * A response that ends after the server stopped listening (a stream finishing its `done` while
 * the service shuts down) must not hold the shutdown for the keep-alive timeout.
 */
describe('CloseIdleOnShutdown', () => {
  it.each([
    ['with it', true, 'closed'],
    // the control: Node alone leaves it open until the keep-alive timeout (5 s here)
    ['without it', false, 'still open'],
  ])('%s, a keep-alive connection whose response ends after close() is %s a second later', async (_label, installed, expected) => {
    let pending: ServerResponse | undefined;
    const server = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(': open\n\n');
      pending = res;
    });
    server.keepAliveTimeout = 5_000;
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const agent = new Agent({ keepAlive: true });
    try {
      const body = new Promise<void>((resolve) => {
        request({ port: (server.address() as AddressInfo).port, host: '127.0.0.1', agent }, (res) => {
          res.resume();
          res.on('end', resolve);
        }).end();
      });
      const open = await waitFor(() => pending, { what: 'the request to reach the server' });
      if (installed) new CloseIdleOnShutdown({ httpAdapter: { getHttpServer: () => server } } as unknown as HttpAdapterHost).beforeApplicationShutdown();
      const closed = new Promise<string>((r) => server.close(() => r('closed')));
      open.end();
      await body;
      // well inside the 5 s keep-alive timeout that would otherwise hold the connection
      expect(await Promise.race([closed, scriptedDelay(1_000).then(() => 'still open')])).toBe(expected);
    } finally {
      agent.destroy();
      server.closeAllConnections();
      server.close();
    }
  });
});
