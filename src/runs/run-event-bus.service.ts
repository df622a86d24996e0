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
  private readonly pendingNotify = new Map<string, NodeJS.Timeout>();

  constructor(private readonly notifier: DbNotifierService) {
    this.emitter.setMaxListeners(0);
  }

  publish(requestId: string, events: SentEvent[]): void {
    this.emitter.emit(requestId, events);
    if (events.length && !this.pendingNotify.has(requestId)) {
      const t = setTimeout(() => {
        this.pendingNotify.delete(requestId);
        void this.notifier.notify(RUN_EVENTS_CHANNEL, requestId);
      }, RunEventBus.NOTIFY_INTERVAL_MS);
      t.unref?.();
      this.pendingNotify.set(requestId, t);
    }
  }

  /** Marks the run's live stream as ended here (done, paused or failed). */
  end(requestId: string): void {
    this.emitter.emit(`${requestId}:end`);
    const t = this.pendingNotify.get(requestId);
    if (t) clearTimeout(t);
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
