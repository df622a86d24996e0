import type { ServerResponse } from 'node:http';

/**
 * Aborted when the caller hangs up before its response was sent. A plain JSON answer of an
 * `@Sse` route needs its own: Nest aborts the stream signal only once a stream has begun.
 */
export function hangUpSignal(res: ServerResponse): AbortSignal {
  const controller = new AbortController();
  const hungUp = () => {
    if (!res.writableFinished) controller.abort();
  };
  if (res.closed || res.socket?.destroyed) hungUp();
  else res.once('close', hungUp);
  return controller.signal;
}
