import { Injectable } from '@nestjs/common';
import type { SseWriter } from '../common/sse/sse-writer';
import { ChatException, ChatExceptionCode } from './chat.exception';
import { RunEventRepository } from './repositories/run-event.repository';
import { RunRepository } from './repositories/run.repository';
import { RunEventBus } from './run-event-bus.service';

/** Fallback poll while following a run, for wake-ups that never arrive (a lost NOTIFY). */
const FOLLOW_POLL_MS = 1000;
const PAGE = 1000;

/**
 * The reconnect route: every stored event after `afterSeq`, then the live run until it ends,
 * on any instance. Everything sent is read from run_events in seq order, so a client that
 * drops and reconnects gets exactly what was sent, with no gap and no repeat.
 */
@Injectable()
export class RunEventsService {
  constructor(
    private readonly runs: RunRepository,
    private readonly events: RunEventRepository,
    private readonly bus: RunEventBus,
  ) {}

  /** 404 before any stream starts when the run does not exist. */
  async requireRun(requestId: string): Promise<void> {
    if (!(await this.runs.findById(requestId))) throw new ChatException(ChatExceptionCode.RUN_NOT_FOUND, `Run ${requestId} not found`);
  }

  async follow(requestId: string, afterSeq: number, sse: SseWriter): Promise<void> {
    let last = afterSeq;
    let wake: (() => void) | null = null;
    let signalled = false;
    const onWake = () => {
      signalled = true;
      wake?.();
    };
    const stop = await this.bus.watch(requestId, onWake);
    const unClose = sse.onClose(onWake);
    try {
      while (!sse.isClosed) {
        signalled = false;
        const rows = await this.events.listAfter(requestId, last, PAGE);
        let ended = false;
        for (const r of rows) {
          await sse.send(r.seq, r.type, r.data);
          last = r.seq;
          if (r.type === 'done' || r.type === 'paused') ended = true;
        }
        if (ended) break;
        if (rows.length === PAGE) continue;
        if (rows.length === 0) {
          const run = await this.runs.findById(requestId);
          // an ended run with nothing more to send: the stream is complete
          if (!run || run.status !== 'running') {
            const more = await this.events.listAfter(requestId, last, 1);
            if (more.length === 0) break;
            continue;
          }
        }
        if (!signalled) {
          await new Promise<void>((resolve) => {
            const t = setTimeout(resolve, FOLLOW_POLL_MS);
            wake = () => {
              clearTimeout(t);
              resolve();
            };
          });
          wake = null;
        }
      }
    } finally {
      stop();
      unClose();
      sse.end();
    }
  }
}
