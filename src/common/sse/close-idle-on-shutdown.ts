import { Injectable, type BeforeApplicationShutdown } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { Server } from 'node:http';

/** How often, while the server closes, connections that went idle are closed. */
const SWEEP_MS = 20;

/**
 * On shutdown, a connection whose last response ends after the server stopped listening is
 * closed at once instead of idling for the keep-alive timeout. Node's server.close() closes only
 * the connections idle at that moment; a stream still sending its `done` (runs are cancelled
 * just before, and their responses end a few ticks later) went idle afterwards and held the
 * shutdown for the whole keep-alive timeout (5 s).
 */
@Injectable()
export class CloseIdleOnShutdown implements BeforeApplicationShutdown {
  constructor(private readonly adapterHost: HttpAdapterHost) {}

  beforeApplicationShutdown(): void {
    const server = this.adapterHost.httpAdapter?.getHttpServer() as Server | undefined;
    if (!server?.listening) return;
    const sweep = setInterval(() => server.closeIdleConnections(), SWEEP_MS);
    sweep.unref();
    server.once('close', () => clearInterval(sweep));
  }
}
