import type { Logger } from '@nestjs/common';
import { emptyUsage, type StopReason } from '../orchestration/protocol-event';
import { anySignal, deadline } from '../common/util/abort.util';
import type { AnswerMetadata, AnswerStore } from './answer-store.port';
import type { RunRepository } from './repositories/run.repository';
import type { RunEventsService } from './run-events.service';
import type { ExecuteRunParams, RunClient } from './run-params';
import type { RunStream } from './run-stream';
import type { TurnStepsRecorder } from './turn-steps';

/** What one leg of a run accumulates for its assistant message. */
export interface Leg {
  content: string;
  readonly steps: TurnStepsRecorder;
}

export interface RunFailuresDeps {
  conversations: AnswerStore;
  runs: RunRepository;
  storedEvents: RunEventsService;
  leaseMs: () => number;
  /** fires on shutdown: stops the waits of streams that lost their lease */
  closing: AbortSignal;
  logger: Logger;
}

/**
 * The two ends of a run that cannot go through its RunStream: the event store failed (the
 * client is told directly), or another instance took the run (the client is sent what that
 * instance stored). Every envelope still comes from the RunStream.
 */
export class RunFailures {
  constructor(private readonly deps: RunFailuresDeps) {}

  /**
   * The event store is down: the client still hears why, numbered after what was stored and
   * sent (the chunks queued past it never will be), and the answer is stored if possible.
   */
  async storageFailed(p: ExecuteRunParams, stream: RunStream, leg: Leg, error: { code: string; message: string }, stopReason: StopReason): Promise<void> {
    const seq = stream.lastSentSeq + 1;
    await p.client?.deliver([stream.envelopeAt(seq, { type: 'error', ...error, retryable: true })]);
    let messageId: string | null = null;
    try {
      leg.steps.apply('error', error);
      const metadata = { stopReason, error: error.code, model: p.turn.model, steps: leg.steps.steps(), ...forkOf(p) };
      messageId = (await this.deps.conversations.insertAssistantOnce(p.conversationId, p.requestId, leg.content, 'error', metadata)).message.id;
      await this.deps.runs.finish(p.requestId, 'failed', stopReason, stream.lastSentSeq, leg.content);
    } catch (e) {
      this.deps.logger.error(`run ${p.requestId}: could not store the answer: ${(e as Error).message}`);
    }
    const done = { type: 'done' as const, fullContent: leg.content, messageId, stopReason, usage: emptyUsage() };
    await p.client?.deliver([stream.envelopeAt(seq + 1, done)]);
  }

  /**
   * This instance lost the run's lease (it stalled past it and another instance closed the run):
   * its client is sent what was stored after the last event it got, read from run_events as the
   * reconnect route reads them (the other instance's `error instance_lost` and `done`, same seq,
   * same JSON), then the stream ends: the client gets its one `done`. They are waited for up to
   * RUN_LEASE_MS (that instance marks the run closed before it stores them); if they are not
   * stored by then (that instance failed too), the client gets `error lease_lost` at the next
   * seq instead, and the stream ends without `done`.
   */
  async sendStoredEnd(p: ExecuteRunParams, client: RunClient, afterSeq: number, stream: RunStream): Promise<void> {
    const bound = this.deps.leaseMs();
    // one timer, cleared as soon as the stored end is forwarded (abort.util: not AbortSignal.timeout)
    const limit = deadline(anySignal(this.deps.closing, client.gone), bound);
    let last: number | null;
    try {
      last = await this.forwardStored(p.requestId, client, afterSeq, limit.signal);
    } finally {
      limit.dispose();
    }
    if (last === null || client.gone?.aborted) return;
    this.deps.logger.warn(`run ${p.requestId}: the end of the run was not stored within ${bound} ms of losing its lease; its client is told so`);
    const message = 'This instance lost the run to another one, which has not stored how it ended; reconnect to the run\'s events route to read its end';
    await client.deliver([stream.envelopeAt(last + 1, { type: 'error', code: 'lease_lost', message, retryable: true })]);
  }

  /** Sends the stored events after `afterSeq` until the run's end; null once that end was sent, else the last seq sent. */
  private async forwardStored(requestId: string, client: RunClient, afterSeq: number, stop: AbortSignal): Promise<number | null> {
    let last = afterSeq;
    try {
      for await (const e of this.deps.storedEvents.untilEnd(requestId, afterSeq, stop)) {
        await client.deliver([e]);
        last = e.seq;
        if (e.type === 'done' || e.type === 'paused') return null;
      }
    } catch (err) {
      this.deps.logger.error(`run ${requestId}: could not read the events stored after its lease was lost: ${(err as Error).message}`);
    }
    return last;
  }
}

/** The answer metadata that links a fork's answer to its parent run. */
export function forkOf(p: Pick<ExecuteRunParams, 'fork'>): Pick<AnswerMetadata, 'forkOf'> {
  return p.fork ? { forkOf: { requestId: p.fork.parentRequestId, phaseIndex: p.fork.fromPhaseIndex } } : {};
}
