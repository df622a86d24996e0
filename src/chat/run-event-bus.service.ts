import { Injectable } from '@nestjs/common';
import { EventEmitter } from 'node:events';

/** An event as sent on the wire: SSE id/`seq`, event name, and the enveloped data. */
export interface SentEvent {
  seq: number;
  type: string;
  data: Record<string, unknown>;
}

/**
 * In-process fan-out of a run's events after they are stored, for followers on this instance
 * (the reconnect route). Followers on other instances read the run_events table instead.
 */
@Injectable()
export class RunEventBus {
  private readonly emitter = new EventEmitter();

  constructor() {
    this.emitter.setMaxListeners(0);
  }

  publish(requestId: string, events: SentEvent[]): void {
    this.emitter.emit(requestId, events);
  }

  /** Marks the run's live stream as ended (done, paused or failed). */
  end(requestId: string): void {
    this.emitter.emit(`${requestId}:end`);
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
