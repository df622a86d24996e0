import { Injectable, type OnApplicationShutdown } from '@nestjs/common';
import { EventEmitter } from 'node:events';
import { DbNotifierService } from '../database/db-notifier.service';

/** NOTIFY channel announcing that a run stored new events; payload: the requestId. */
export const RUN_EVENTS_CHANNEL = 'orion_run_events';

/** An event as sent on the wire: SSE id/`seq`, event name, and the enveloped data. */
export interface SentEvent {
  seq: number;
  type: string;
  data: Record<string, unknown>;
  /** `data` serialized once, when the event was made (stored and sent as is) */
  json?: string;
}

/** NOTIFY channel on which a follower on another instance says it watches a run; payload: the requestId. */
export const RUN_WATCH_CHANNEL = 'orion_run_watch';

/**
 * Wake-ups for followers of a run (the reconnect route) once its events are stored: in-process
 * for followers on this instance, and a NOTIFY for followers on other instances. Followers
 * always read the events themselves from run_events, so what they send is what was stored.
 *
 * A run's events are announced by NOTIFY only while a follower elsewhere watches it: such a
 * follower says so on RUN_WATCH_CHANNEL when it starts and every WATCH_TTL_MS / 2 after. Every
 * NOTIFY is a commit and reaches every listening instance, so announcing every streaming run
 * would cost each run ten commits a second and each instance every other instance's traffic.
 * Until the first announcement arrives the follower's own poll covers it; the end of a run is
 * always announced.
 */
@Injectable()
export class RunEventBus implements OnApplicationShutdown {
  /** at most one NOTIFY per run per this many ms while it streams (the trailing one is kept) */
  static readonly NOTIFY_INTERVAL_MS = 100;
  /** how long a follower's announcement counts; it repeats it twice as often */
  static readonly WATCH_TTL_MS = 10_000;
  private readonly emitter = new EventEmitter();
  /** watched runs with stored events not yet announced; one timer for all, so their NOTIFYs go together */
  private readonly pendingNotify = new Set<string>();
  private notifyTimer: NodeJS.Timeout | null = null;
  /** runs announced as watched by another instance, until when */
  private readonly watched = new Map<string, number>();
  /** runs executing here (published, not ended) */
  private readonly local = new Set<string>();
  private watchListener: Promise<() => void> | null = null;

  constructor(private readonly notifier: DbNotifierService) {
    this.emitter.setMaxListeners(0);
  }

  publish(requestId: string, events: SentEvent[]): void {
    if (!this.local.has(requestId)) {
      this.local.add(requestId);
      this.watchListener ??= this.notifier
        .listen(RUN_WATCH_CHANNEL, (p) => {
          // announcements reach every instance; only the one executing the run keeps them
          if (this.local.has(p)) this.watched.set(p, Date.now() + RunEventBus.WATCH_TTL_MS);
        })
        .catch(() => () => undefined);
    }
    this.emitter.emit(requestId, events);
    if (!events.length || !((this.watched.get(requestId) ?? 0) > Date.now())) return;
    this.pendingNotify.add(requestId);
    if (!this.notifyTimer) {
      this.notifyTimer = setTimeout(() => {
        this.notifyTimer = null;
        const ids = [...this.pendingNotify];
        this.pendingNotify.clear();
        for (const id of ids) void this.notifier.notify(RUN_EVENTS_CHANNEL, id);
      }, RunEventBus.NOTIFY_INTERVAL_MS);
      this.notifyTimer.unref?.();
    }
  }

  /** Marks the run's live stream as ended here (done, paused or failed). */
  end(requestId: string): void {
    this.emitter.emit(`${requestId}:end`);
    this.pendingNotify.delete(requestId);
    this.local.delete(requestId);
    this.watched.delete(requestId);
    void this.notifier.notify(RUN_EVENTS_CHANNEL, requestId);
  }

  /** Wakes `onWake` whenever the run may have new events, on any instance. */
  async watch(requestId: string, onWake: () => void): Promise<() => void> {
    const local = this.subscribe(requestId, onWake, onWake);
    const remote = await this.notifier.listen(RUN_EVENTS_CHANNEL, (p) => {
      if (p === requestId) onWake();
    });
    // a run executing here wakes its followers in-process; one elsewhere is told someone watches
    const announce = () => {
      if (!this.local.has(requestId)) void this.notifier.notify(RUN_WATCH_CHANNEL, requestId);
    };
    announce();
    const again = setInterval(announce, RunEventBus.WATCH_TTL_MS / 2);
    again.unref?.();
    return () => {
      clearInterval(again);
      local();
      remote();
    };
  }

  async onApplicationShutdown(): Promise<void> {
    if (this.notifyTimer) clearTimeout(this.notifyTimer);
    (await this.watchListener)?.();
  }

  subscribe(requestId: string, onEvents: (events: SentEvent[]) => void, onEnd: () => void): () => void {
    this.emitter.on(requestId, onEvents);
    this.emitter.on(`${requestId}:end`, onEnd);
    return () => {
      this.emitter.off(requestId, onEvents);
      this.emitter.off(`${requestId}:end`, onEnd);
    };
  }
}
