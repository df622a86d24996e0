import { type CallHandler, type ExecutionContext, Injectable, type NestInterceptor } from '@nestjs/common';
import { SSE_METADATA } from '@nestjs/common/constants.js';
import { Reflector } from '@nestjs/core';
import type { ServerResponse } from 'node:http';
import type { Observable } from 'rxjs';
import { openStreams } from './open-streams';

/**
 * Counts every `@Sse()` route's response while it is open (the `orion_open_streams` gauge), in
 * one place for all stream routes, so a new route is counted without remembering to.
 */
@Injectable()
export class OpenStreamsInterceptor implements NestInterceptor {
  constructor(private readonly reflector: Reflector) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    if (context.getType() === 'http' && this.reflector.get<boolean>(SSE_METADATA, context.getHandler())) {
      const res = context.switchToHttp().getResponse<ServerResponse>();
      if (!res.destroyed) openStreams.track(res);
    }
    return next.handle();
  }
}
