/**
 * How a run ends, once: its answer stored, `done` sent with the answer's id and the run closed,
 * or, when the turn threw, closed with an error (or left to the instance that took it over).
 */
import type { Logger } from '@nestjs/common';
import { emptyUsage, type ProtocolEvent, type StopReason } from '../orchestration/protocol-event';
import type { TraceSink } from '../trace/trace-sink.port';
import type { AnswerStatus, AnswerStore, TurnStep } from './answer-store.port';
import type { RunStatus } from './entities/run.entity';
import { LeaseLostError } from './repositories/run-event.repository';
import type { RunControlService } from './run-control.service';
import { forkOf, type Leg, type RunFailures } from './run-failures';
import type { RunHandover } from './run-handover';
import type { ExecuteRunParams } from './run-params';
import type { EndEvent, RunStream } from './run-stream';

/** How a run is going, as its parts learn it: how it ended, whether its lease was lost, what its client got. */
export interface RunState {
  ended: 'done' | 'paused' | null;
  leaseLost: boolean;
  /** the last seq this run's client was handed: after a lost lease it is sent what was stored after it */
  clientSeq: number;
}

export interface RunEndingDeps {
  conversations: AnswerStore;
  control: RunControlService;
  trace: TraceSink;
  failures: RunFailures;
  handover?: RunHandover;
  /** the application is shutting down: the trace writer's own shutdown flush stores the trace */
  shuttingDown: () => boolean;
  logger: Logger;
}

export class RunEnding {
  constructor(private readonly deps: RunEndingDeps) {}

  /** Stores the assistant message once, then sends `done` with its id and closes the run. */
  async finish(p: ExecuteRunParams, stream: RunStream, turnDone: Extract<ProtocolEvent, { type: 'done' }>, steps: TurnStep[]): Promise<void> {
    // the cost goes wherever the usage goes: done, the stored answer, the trace, the webhook
    const done = { ...turnDone, usage: p.turn.priced?.(turnDone.usage) ?? turnDone.usage };
    const status: AnswerStatus = done.stopReason === 'cancelled' ? 'cancelled' : done.stopReason === 'error' ? 'error' : 'complete';
    const runStatus: Exclude<RunStatus, 'running' | 'awaiting_approval' | 'paused'> = done.stopReason === 'cancelled' ? 'cancelled' : done.stopReason === 'error' ? 'failed' : 'completed';
    // held events (the turn's sources, a last error) are stored by the closing statement, with `done`
    await stream.settle();
    if (stream.error) throw stream.error;
    // handed over on shutdown: the answer is the taker's to store
    if (this.deps.handover?.fenced(p.requestId)) throw new LeaseLostError(p.requestId);
    const { message } = await this.deps.conversations.insertAssistantOnce(p.conversationId, p.requestId, done.fullContent, status, {
      stopReason: done.stopReason,
      protocol: p.turn.protocol.name,
      model: p.turn.model,
      usage: done.usage,
      steps,
      ...forkOf(p),
    });
    const type = runStatus === 'completed' ? 'run_completed' : runStatus === 'cancelled' ? 'run_cancelled' : 'run_failed';
    this.deps.trace.record({
      requestId: p.requestId,
      projectId: p.projectId,
      type,
      details: { stopReason: done.stopReason, messageId: message.id, lastSeq: stream.lastSeq + 1, usage: done.usage },
    });
    // the turn's whole trace is stored before `done` goes out (GET /api/trace right after `done`
    // shows every tool call), and the run is closed in the same statement that stores `done`.
    // On shutdown the writer's own shutdown flush stores it (before the database closes); awaiting
    // here then holds the response past the HTTP server's close (a 5 s keep-alive wait).
    if (!this.deps.shuttingDown()) await this.deps.trace.flush();
    await stream.close({ ...done, messageId: message.id } as EndEvent, { status: runStatus, stopReason: done.stopReason, announce: { answer: done.fullContent, usage: { ...done.usage } } });
    if (stream.error) throw stream.error;
  }

  /**
   * Last resort when the generator threw or the database failed: tell the client why (directly
   * when the event store is what failed), store what was streamed, close the run.
   */
  async finishWithError(p: ExecuteRunParams, stream: RunStream, leg: Leg, error: { code: string; message: string }, signal: AbortSignal): Promise<void> {
    const stopReason: StopReason = signal.aborted ? 'cancelled' : 'error';
    if (stream.error) return this.deps.failures.storageFailed(p, stream, leg, error, stopReason);
    if (stopReason === 'error') {
      leg.steps.apply('error', error);
      await stream.emit({ type: 'error', ...error, retryable: false });
    }
    await this.finish(p, stream, { type: 'done', fullContent: leg.content, stopReason, usage: emptyUsage() }, leg.steps.steps());
  }

  /** The run threw: another instance took it over, or it is closed here with an error. */
  async failed(p: ExecuteRunParams, stream: RunStream, leg: Leg, err: unknown, signal: AbortSignal, state: RunState): Promise<void> {
    const { logger } = this.deps;
    if (err instanceof LeaseLostError || stream.error instanceof LeaseLostError) {
      // another instance closed this run: whatever it stored is what clients see
      logger.warn(`run ${p.requestId}: lease lost; the turn stopped, its client gets the end the other instance stores`);
      this.deps.control.cancelLocal(p.requestId, 'lease_lost');
      state.leaseLost = true;
      state.ended = 'done';
      return;
    }
    if (state.ended) return;
    const storage = stream.error !== null;
    logger.error(`run ${p.requestId} failed: ${(err as Error)?.stack ?? String(err)}`);
    const error = storage
      ? { code: 'storage_error', message: 'Could not store the run events; the turn was stopped' }
      : { code: 'internal_error', message: 'Internal error while running the turn' };
    await this.finishWithError(p, stream, leg, error, signal).catch((e) => {
      // the run was taken over while it was being closed here (its `done` was fenced)
      if (e instanceof LeaseLostError) state.leaseLost = true;
      else logger.error(`could not close run ${p.requestId}: ${(e as Error).message}`);
    });
    state.ended = 'done';
  }
}
