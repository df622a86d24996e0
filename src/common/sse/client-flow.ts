import type { ServerResponse } from 'node:http';
import { keepTurnUntil } from '../limits/turn-hold';

/**
 * Lets a producer wait for a slow SSE client. Nest's `@Sse()` queues events behind `drain`
 * but cannot tell the producer to wait; this does, so a client that stops reading stops the
 * model stream instead of growing a queue (see docs/ARCHITECTURE.md, "The SSE edge").
 */
export interface ClientFlow {
  /** resolves once the client can take more (at once when it can, or when it is gone) */
  ready(): Promise<void>;
  /**
   * What is written to the client until the event loop's next turn goes out together: one
   * socket write per tick for a batch of events, rather than one per event.
   */
  hold?(): void;
  /**
   * The run goes on after the client leaves (detached): what the response holds for it (its
   * concurrency slots) stays held until `ended` settles.
   */
  outlive?(ended: Promise<unknown>): void;
}

export const UNBOUNDED_FLOW: ClientFlow = { ready: () => Promise.resolve() };

/** The flow of an HTTP response: ready unless its socket buffer is full. */
export function responseFlow(res: ServerResponse): ClientFlow {
  let holding = false;
  return {
    outlive: (ended) => keepTurnUntil(res, ended),
    hold: () => {
      const socket = res.socket;
      if (holding || !socket || socket.destroyed || res.writableEnded) return;
      holding = true;
      socket.cork();
      // the socket itself is released, not the response: a keep-alive socket that the response
      // has already let go of must not stay corked for the next request
      setImmediate(() => {
        holding = false;
        socket.uncork();
      });
    },
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
