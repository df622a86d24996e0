import { createParamDecorator, type ExecutionContext, SSE_ABORT_CONTROLLER } from '@nestjs/common';
import type { Request, Response } from 'express';

type SignalCarrier = Request & { [SSE_ABORT_CONTROLLER]?: AbortController };

/**
 * The signal that a route's caller has gone, the same on streaming and plain routes. On an
 * `@Sse` route it is Nest's own (what `@SseSignal()` gives: aborted when the client leaves or
 * the stream ends). On any other route Nest makes none, so one is made here, kept on the
 * request as Nest keeps its own, and aborted when the connection closes before the response
 * was sent (the caller hung up). Listening on the response rather than the socket: a keep-alive
 * socket outlives its requests, and a listener per request on it would pile up.
 */
export const ClientSignal = createParamDecorator((_data: unknown, ctx: ExecutionContext): AbortSignal => {
  const req = ctx.switchToHttp().getRequest<SignalCarrier>();
  const own = req[SSE_ABORT_CONTROLLER];
  if (own) return own.signal;
  const res = ctx.switchToHttp().getResponse<Response>();
  const controller = new AbortController();
  req[SSE_ABORT_CONTROLLER] = controller;
  const hungUp = () => {
    if (!res.writableFinished) controller.abort();
  };
  // the caller may have left while guards and pipes ran
  if (res.closed || req.socket.destroyed) hungUp();
  else res.once('close', hungUp);
  return controller.signal;
});
