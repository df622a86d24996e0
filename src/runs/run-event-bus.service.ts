import { Injectable } from '@nestjs/common';
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

/**
 * Wake-ups for followers of a run (the reconnect route) once its events are stored: in-process
 * for followers on this instance, and a NOTIFY for followers on other instances. Followers
 * always read the events themselves from run_events, so what they send is what was stored.
 */
@Injectable()
export class RunEventBus {
  /** at most one NOTIFY per run per this many ms while it streams (the trailing one is kept) */
  static readonly NOTIFY_INTERVAL_MS = 100;
  private readonly emitter = new EventEmitter();
  /** runs with stored events not yet announced; one timer for all, so their NOTIFYs go together */
  private readonly pendingNotify = new Set<string>();
  private notifyTimer: NodeJS.Timeout | null = null;

  constructor(private readonly notifier: DbNotifierService) {
    this.emitter.setMaxListeners(0);
  }

  publish(requestId: string, events: SentEvent[]): void {
    this.emitter.emit(requestId, events);
    if (!events.length) return;
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
    void this.notifier.notify(RUN_EVENTS_CHANNEL, requestId);
  }

  /** Wakes `onWake` whenever the run may have new events, on any instance. */
  async watch(requestId: string, onWake: () => void): Promise<() => void> {
    const local = this.subscribe(requestId, onWake, onWake);
    const remote = await this.notifier.listen(RUN_EVENTS_CHANNEL, (p) => {
      if (p === requestId) onWake();
    });
    return () => {
      local();
      remote();
    };
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
