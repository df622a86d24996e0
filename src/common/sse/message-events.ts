import type { MessageEvent } from '@nestjs/common';
import { defer, finalize, Observable } from 'rxjs';
import { openStreams } from './open-streams';

/** Comment lines keep proxies and browsers from timing out an idle stream (API.md: every 15 s). */
export const KEEP_ALIVE_MS = 15_000;

/** An event as it goes on the wire: SSE id, event name, JSON data. */
export interface WireMessage {
  id?: number | string;
  /** the SSE event name; none for formats that send only `data:` lines (the AI SDK's UI message stream) */
  type?: string;
  data: unknown;
  /** `data` already serialized, sent as is */
  json?: string;
}

/**
 * Characters of events that may wait for a client that does not read (`@Sse` option). Producers
 * wait for the socket (ClientFlow), so only about one batch waits; past this bound the client is
 * dropped, which cancels its run unless it is detached.
 */
export const SSE_MAX_PENDING_CHARS = 1 << 20;

const KEEP_ALIVE: MessageEvent = { comment: 'keep-alive' };

/**
 * The stream an `@Sse()` handler returns: each event with its id, name and one JSON data line,
 * plus a `: keep-alive` comment after every `keepAliveMs` without an event. Counted as an open
 * stream (`orion_open_streams`) from Nest's subscription until it ends or the client leaves;
 * counting here rather than in an interceptor matters: an interceptor on an `@Sse()` route defers
 * the handler, so Nest commits the 200 headers before a 404/409 thrown by the handler can answer.
 */
export function toMessageEvents(events: Observable<WireMessage>, keepAliveMs = KEEP_ALIVE_MS): Observable<MessageEvent> {
  return defer(() => {
    const release = openStreams.open();
    return wireMessages(events, keepAliveMs).pipe(finalize(release));
  });
}

/**
 * One timer per stream, not one per event: an event only notes when it passed, and the timer,
 * when it fires, either sends the keep-alive (nothing for `keepAliveMs`) or waits out the rest.
 * (Restarting an rxjs `interval` at every event made a timer, a subscription and a few operator
 * subscribers per event: ~7 % of what a turn allocates, all of it garbage a moment later.)
 */
function wireMessages(events: Observable<WireMessage>, keepAliveMs: number): Observable<MessageEvent> {
  return new Observable<MessageEvent>((subscriber) => {
    let last = performance.now();
    let timer: NodeJS.Timeout | undefined;
    const wake = () => {
      const idle = performance.now() - last;
      if (idle >= keepAliveMs) {
        last = performance.now();
        subscriber.next(KEEP_ALIVE);
      }
      // the keep-alive may have ended the stream (a write error): no timer after teardown
      if (subscriber.closed) return;
      timer = setTimeout(wake, Math.max(1, keepAliveMs - (performance.now() - last)));
    };
    timer = setTimeout(wake, keepAliveMs);
    const source = events.subscribe({
      next: (e) => {
        last = performance.now();
        let message: MessageEvent;
        try {
          message = { id: e.id === undefined ? undefined : String(e.id), type: e.type, data: e.json ?? JSON.stringify(e.data) };
        } catch (err) {
          // data JSON cannot carry (a BigInt, a cycle) ends this stream with an error, as an rxjs
          // `map` did; thrown from here it would reach rxjs's unhandled-error report, which
          // rethrows it outside any handler and stops the process (every open stream with it)
          subscriber.error(err);
          return;
        }
        subscriber.next(message);
      },
      error: (err: unknown) => subscriber.error(err),
      complete: () => subscriber.complete(),
    });
    return () => {
      clearTimeout(timer);
      source.unsubscribe();
    };
  });
}
