import { Agent, createServer, request, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { HttpAdapterHost } from '@nestjs/core';
import { CloseIdleOnShutdown } from './close-idle-on-shutdown';
import { waitFor } from '../../../test/support/wait-for';

/**
 * A response that ends after the server stopped listening (a stream finishing its `done` while
 * the service shuts down) must not hold the shutdown for the keep-alive timeout.
 */
describe('CloseIdleOnShutdown', () => {
  afterEach(() => jest.useRealTimers());

  it.each([
    ['with it', 'closed', true],
    // the control: Node alone leaves it open until the keep-alive timeout (none here)
    ['without it', 'still open', false],
  ])('%s, a keep-alive connection whose response ends after close() is %s', async (_label, expected, installed) => {
    let pending: ServerResponse | undefined;
    const server = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(': open\n\n');
      pending = res;
    });
    // no keep-alive timeout: only the sweep can close the idle connection, nothing closes it by time
    server.keepAliveTimeout = 0;
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
      // the sweep's interval on a fake clock that the test moves on; I/O and ticks stay real
      jest.useFakeTimers({ doNotFake: ['nextTick', 'setImmediate', 'queueMicrotask'] });
      if (installed) new CloseIdleOnShutdown({ httpAdapter: { getHttpServer: () => server } } as unknown as HttpAdapterHost).beforeApplicationShutdown();
      let outcome = 'still open';
      const closed = new Promise<void>((r) => server.close(() => r())).then(() => (outcome = 'closed'));
      open.end();
      await body;
      await jest.advanceTimersByTimeAsync(1_000); // the sweep, if installed, has run many times
      if (installed) await closed; // a connection the sweep missed would hold this until the test times out
      else expect(await new Promise((r) => server.getConnections((_err, n) => r(n)))).toBe(1); // idle, not closed
      expect(outcome).toBe(expected);
    } finally {
      agent.destroy();
      server.closeAllConnections();
      server.close();
    }
  });
});
