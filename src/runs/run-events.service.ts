import { Injectable } from '@nestjs/common';
import { filter, type Observable } from 'rxjs';
import { fromGenerator } from '../common/sse/from-generator';
import { type ClientFlow, UNBOUNDED_FLOW } from '../common/sse/client-flow';
import { Drain } from '../common/lifecycle/drain';
import { isSuperseded, supersededRanges } from './fork-prefix';
import { RunEventRepository } from './repositories/run-event.repository';
import { RunRepository } from './repositories/run.repository';
import { RunEventBus, type SentEvent } from './run-event-bus.service';
import { RunsException, RunsExceptionCode } from './runs.exception';

/** Fallback poll while following a run, for wake-ups that never arrive (a lost NOTIFY). */
const FOLLOW_POLL_MS = 1000;
const PAGE = 1000;
/** how long a follower waits for the end of a run seen closed before its `done` was stored */
const ENDED_WAIT_MS = 5 * FOLLOW_POLL_MS;

/**
 * The reconnect route: every stored event after `afterSeq`, then the live run until it ends,
 * on any instance. Everything sent is read from run_events in seq order, so a client that
 * drops and reconnects gets exactly what was sent, with no gap and no repeat.
 */
@Injectable()
export class RunEventsService {
  private open = 0;

  constructor(
    private readonly runs: RunRepository,
    private readonly events: RunEventRepository,
    private readonly bus: RunEventBus,
    private readonly drain: Drain,
  ) {}

  /** How many `follow` streams are open on this instance. */
  get following(): number {
    return this.open;
  }

  /**
   * 404 before any stream starts when the run does not exist; false when the run has ended and
   * has nothing after `afterSeq`, which is its end (there is nothing to stream: the edge answers 204).
   */
  async hasMore(requestId: string, afterSeq: number): Promise<boolean> {
    const run = await this.runs.findById(requestId);
    if (!run) throw new RunsException(RunsExceptionCode.RUN_NOT_FOUND, `Run ${requestId} not found`);
    if (run.status === 'running' || run.status === 'awaiting_approval') return true;
    if ((await this.events.listAfter(requestId, afterSeq, 1)).length > 0) return true;
    // ended and nothing after afterSeq: complete, unless its end is not stored yet (a sweeper
    // between its claim and its `error` + `done`): then the stream waits for it (bounded)
    return !(await this.endStoredAt(requestId, afterSeq));
  }

  /** Every stored event of the run after `afterSeq` as they are now, without waiting (a snapshot of the run). */
  async stored(requestId: string, afterSeq = 0): Promise<SentEvent[]> {
    const out: SentEvent[] = [];
    for (let last = afterSeq; ; ) {
      const rows = await this.events.listAfter(requestId, last, PAGE);
      for (const r of rows) out.push({ seq: r.seq, type: r.type, data: r.data });
      if (rows.length < PAGE) return out;
      last = rows[rows.length - 1].seq;
    }
  }

  /**
   * The run's events after `afterSeq`, then its live events until it ends or `stop` fires; a
   * client that leaves returns the generator (its watch of the run ends with it). On a draining
   * instance, once its own runs are handed over (Drain.followersEnd), the stream sends what is
   * stored and ends without the run's end: its client reconnects to another instance.
   */
  follow(requestId: string, afterSeq: number, flow: ClientFlow, stop: AbortSignal): Observable<SentEvent> {
    return fromGenerator(this.pages(requestId, afterSeq, flow, stop, false));
  }

  /**
   * `follow` from the run's first event without what a takeover superseded (issue 44), for the
   * edges that cannot take back what they sent (the UI stream). The takeovers are those stored
   * when it starts; one stored later supersedes events that may already be sent.
   */
  async followLive(requestId: string, flow: ClientFlow, stop: AbortSignal): Promise<Observable<SentEvent>> {
    const keep = await this.notSuperseded(requestId);
    return this.follow(requestId, 0, flow, stop).pipe(filter((e) => keep(e)));
  }

  /** Whether an event is outside what the run's takeovers stored so far superseded (see followLive). */
  async notSuperseded(requestId: string): Promise<(e: { seq: number }) => boolean> {
    const cuts = supersededRanges(await this.stored(requestId));
    return (e) => !isSuperseded(cuts, e.seq);
  }

  /**
   * The run's stored events after `afterSeq` up to its end (`done` or `paused`), waiting for
   * them as `follow` does until they are stored or `stop` fires. For the stream of an instance
   * that lost the run's lease: the instance that took the run marks it closed before it stores
   * its `error` and `done`, so a run that is no longer running is still waited on here. The
   * caller paces its client itself.
   */
  untilEnd(requestId: string, afterSeq: number, stop: AbortSignal): AsyncGenerator<SentEvent> {
    return this.pages(requestId, afterSeq, UNBOUNDED_FLOW, stop, true);
  }

  /** Whether the event stored at `seq` ends the run's stream (`done`, or a `paused` nothing followed). */
  private async endStoredAt(requestId: string, seq: number): Promise<boolean> {
    if (seq <= 0) return false;
    const [at] = await this.events.listAfter(requestId, seq - 1, 1);
    return at?.type === 'done' || at?.type === 'paused';
  }

  private async *pages(requestId: string, afterSeq: number, flow: ClientFlow, stop: AbortSignal, waitForEnd: boolean): AsyncGenerator<SentEvent> {
    // a stream that waits for the run's end is bounded by its caller; one that follows is ended by the drain
    const leaving = waitForEnd ? null : this.drain.followersEnd;
    let last = afterSeq;
    /** when the run was first seen ended with its end not yet stored */
    let endedSince: number | null = null;
    let wake: (() => void) | null = null;
    let signalled = false;
    const onWake = () => {
      signalled = true;
      wake?.();
    };
    const unwatch = await this.bus.watch(requestId, onWake);
    stop.addEventListener('abort', onWake, { once: true });
    leaving?.addEventListener('abort', onWake, { once: true });
    if (!waitForEnd) this.open++;
    try {
      while (!stop.aborted) {
        signalled = false;
        const rows = await this.events.listAfter(requestId, last, PAGE);
        let ended = false;
        if (rows.length) flow.hold?.();
        for (const r of rows) {
          yield { seq: r.seq, type: r.type, data: r.data };
          last = r.seq;
          // following (not waitForEnd), a paused that a resume followed is not the end: the run goes on
          if (r.type === 'done' || (waitForEnd && r.type === 'paused')) ended = true;
        }
        if (ended) break;
        await flow.ready();
        if (rows.length === PAGE) continue;
        // everything stored until now is sent: the instance is leaving, the client reconnects elsewhere
        if (leaving?.aborted) break;
        // a stored paused last: the end unless the run was resumed meanwhile (then its leg follows)
        if ((rows.length === 0 || rows.at(-1)!.type === 'paused') && !waitForEnd) {
          const run = await this.runs.findById(requestId);
          // an ended run with nothing more to send: the stream is complete once its end is stored
          if (!run || (run.status !== 'running' && run.status !== 'awaiting_approval')) {
            const more = await this.events.listAfter(requestId, last, 1);
            if (more.length > 0) continue;
            // a sweeper marks the run closed before it stores its `error` and `done`: a client that
            // reconnected in between waits for them (bounded) instead of a stream without an end
            endedSince ??= Date.now();
            if (!run || (await this.endStoredAt(requestId, last)) || Date.now() - endedSince > ENDED_WAIT_MS) break;
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
      stop.removeEventListener('abort', onWake);
      leaving?.removeEventListener('abort', onWake);
      if (!waitForEnd) this.open--;
      unwatch();
    }
  }
}
