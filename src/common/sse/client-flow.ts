import type { ServerResponse } from 'node:http';

/**
 * Lets a producer wait for a slow SSE client. Nest's `@Sse()` queues events behind `drain`
 * but cannot tell the producer to wait; this does, so a client that stops reading stops the
 * model stream instead of growing a queue (see docs/ARCHITECTURE.md, "The SSE edge").
 */
export interface ClientFlow {
  /** resolves once the client can take more (at once when it can, or when it is gone) */
  ready(): Promise<void>;
}

export const UNBOUNDED_FLOW: ClientFlow = { ready: () => Promise.resolve() };

/** The flow of an HTTP response: ready unless its socket buffer is full. */
export function responseFlow(res: ServerResponse): ClientFlow {
  return {
    ready: () => {
      if (!res.writableNeedDrain || res.destroyed || res.writableEnded) return Promise.resolve();
      return new Promise<void>((resolve) => {
        const done = () => {
          res.off('drain', done);
          res.off('close', done);
          resolve();
        };
        res.once('drain', done);
        res.once('close', done);
      });
    },
  };
}
