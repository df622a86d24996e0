import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown, Optional } from '@nestjs/common';
import { AppConfigService } from '../config/app-config.service';
import { emptyUsage, type PhaseName } from '../orchestration/protocol-event';
import { TRACE_SINK, type TraceSink } from '../trace/trace-sink.port';
import { ANSWER_STORE, type AnswerStore } from './answer-store.port';
import { forkPrefix, liveEvents, textUpTo } from './fork-prefix';
import { RunEventRepository } from './repositories/run-event.repository';
import { RunRepository } from './repositories/run.repository';
import { RunTakeoverRepository } from './repositories/run-takeover.repository';
import { ApprovalRepository } from './repositories/approval.repository';
import { RunEventBus } from './run-event-bus.service';
import { runEnvelope, type EnvelopeState } from './run-envelope';
import { TurnStepsRecorder } from './turn-steps';
import { WebhookOutboxRepository } from '../webhooks/repositories/webhook-outbox.repository';
import type { RunEntity } from './entities/run.entity';
import { INSTANCE_ID } from './run-lease';
import { IdempotencyKeyStore } from '../database/idempotency-key.store';

/** Continues a run taken over by this instance; resolves once it started (it then runs detached), with the checkpoint it continues from. */
export type Takeover = (run: RunEntity) => Promise<number>;

const INSTANCE_LOST_MESSAGE = 'The instance running this turn stopped; the turn was closed with what it had streamed';

/** Why a run whose instance died was closed rather than continued elsewhere (issue 44), as its error message ends. */
export type CloseReason = 'lease_expired' | 'protocol_cannot_continue' | 'no_checkpoint' | 'takeovers_exhausted' | 'takeover_failed' | 'tool_interrupted';

/** Thrown by a Takeover that must not continue the run: it is closed with `reason`. */
export class TakeoverRefused extends Error {
  constructor(
    readonly reason: CloseReason,
    message: string,
  ) {
    super(message);
  }
}
const BECAUSE: Record<CloseReason, string> = {
  lease_expired: '',
  protocol_cannot_continue: ' (its protocol cannot continue from a checkpoint)',
  no_checkpoint: ' (it had no checkpoint to continue from yet)',
  takeovers_exhausted: ' (its instance died RUN_MAX_TAKEOVERS times already)',
  takeover_failed: ' (the instance that took it over could not continue it)',
  tool_interrupted: ' (a tool call was running when it stopped; it may or may not have run, and is not run again)',
};

/**
 * Closes runs whose instance died. A running instance renews its lease every RUN_LEASE_MS / 3;
 * every instance sweeps every RUN_LEASE_MS / 2 for leases that expired, and exactly one claims
 * each such run (SKIP LOCKED): it is marked `failed`, its assistant message is built from the
 * chunks it had stored, and `error` + `done` events are appended so a follower sees it end.
 * A run of a protocol that can continue from a checkpoint is taken over instead
 * (`registerTakeover`) when it waited for a person (it goes on here, waiting for the same
 * approval) or, issue 44, when it was running and has a checkpoint and was taken over fewer than
 * RUN_MAX_TAKEOVERS times: it continues here from that checkpoint.
 */
@Injectable()
export class RunSweeperService implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('RunSweeper');
  private timer: NodeJS.Timeout | null = null;
  private sweeping = false;
  private takeover: { protocols: string[]; continueHere: Takeover } | null = null;

  constructor(
    private readonly runs: RunRepository,
    private readonly takeovers: RunTakeoverRepository,
    private readonly events: RunEventRepository,
    @Inject(ANSWER_STORE) private readonly conversations: AnswerStore,
    private readonly bus: RunEventBus,
    private readonly config: AppConfigService,
    @Inject(TRACE_SINK) private readonly trace: TraceSink,
    private readonly approvals: ApprovalRepository,
    private readonly webhooks: WebhookOutboxRepository,
    @Optional() private readonly keys?: IdempotencyKeyStore,
  ) {}

  onApplicationBootstrap(): void {
    const every = Math.max(500, Math.floor(this.config.get('RUN_LEASE_MS') / 2));
    this.timer = setInterval(() => void this.sweep(), every);
    this.timer.unref?.();
  }

  onApplicationShutdown(): void {
    if (this.timer) clearInterval(this.timer);
  }

  /**
   * Registers how runs of `protocols` that waited for a person when their instance died are
   * continued here (RunsService.onTakeover): instead of being closed, they are taken over.
   */
  registerTakeover(protocols: string[], continueHere: Takeover): void {
    this.takeover = { protocols, continueHere };
  }

  /**
   * One pass now, e.g. after a decision on a run whose instance died, rather than at the next
   * tick; a pass under way covers it. Never throws.
   */
  sweepSoon(): void {
    void this.sweep();
  }

  /** One pass; returns the runs it closed (not those it took over). */
  async sweep(): Promise<string[]> {
    if (this.sweeping) return [];
    this.sweeping = true;
    const closed: string[] = [];
    try {
      closed.push(...(await this.takeOver()));
      for (const run of await this.takeovers.claimExpired(20, this.takeover?.protocols, this.config.get('RUN_MAX_TAKEOVERS'))) {
        // a run that cannot continue elsewhere is closed; the approvals it waited for are void
        await this.approvals.voidPendingOfRun(run.requestId, 'instance_lost').catch((err) => this.logger.warn(`could not void the approvals of run ${run.requestId}: ${(err as Error).message}`));
        await this.closeFromStoredEvents(run, 'failed', run.reason).catch((err) => this.logger.error(`could not close run ${run.requestId}: ${(err as Error).message}`));
        closed.push(run.requestId);
      }
      // Idempotency-Keys past their window (a send with one replaces it anyway)
      await this.keys?.purgeExpired().catch((err: unknown) => this.logger.warn(`could not purge expired idempotency keys: ${(err as Error).message}`));
    } catch (err) {
      this.logger.warn(`sweep failed: ${(err as Error).message}`);
    } finally {
      this.sweeping = false;
    }
    return closed;
  }

  /**
   * Runs whose instance died that can continue (waiting for a person, or running with a
   * checkpoint) are leased to this instance (exactly one sweeper claims each) and continued here
   * from their latest checkpoint. One that cannot be continued is closed as failed, like any lost run.
   */
  private async takeOver(): Promise<string[]> {
    const closed: string[] = [];
    if (!this.takeover) return closed;
    const { protocols, continueHere } = this.takeover;
    const claimed = await this.takeovers.claimForTakeover(INSTANCE_ID, this.config.get('RUN_LEASE_MS'), protocols, 20, this.config.get('RUN_MAX_TAKEOVERS'));
    for (const { run, fromInstance, handedOver } of claimed) {
      const why = handedOver ? `its instance ${fromInstance} handed it over on shutdown` : "its instance's lease expired";
      this.logger.warn(`run ${run.requestId}: ${why} while it ${run.status === 'running' ? 'ran' : 'waited for a person'}; continued here`);
      const taken = (outcome: 'continued' | 'failed' | 'refused', checkpoint: number | null) =>
        this.trace.record({ requestId: run.requestId, projectId: run.projectId, type: 'run_taken_over', details: { fromInstance, handedOver, checkpoint, route: run.protocol, outcome, takeovers: run.takeovers, status: run.status } });
      try {
        taken('continued', await continueHere(run));
      } catch (err) {
        this.logger.error(`run ${run.requestId} could not be taken over: ${(err as Error).message}`);
        if (!(await this.takeovers.failTakenOver(run.requestId, INSTANCE_ID).catch(() => false))) continue;
        taken(err instanceof TakeoverRefused ? 'refused' : 'failed', null);
        await this.approvals.voidPendingOfRun(run.requestId, 'instance_lost').catch(() => 0);
        await this.closeFromStoredEvents(run, 'failed', err instanceof TakeoverRefused ? err.reason : 'takeover_failed').catch((e) => this.logger.error(`could not close run ${run.requestId}: ${(e as Error).message}`));
        closed.push(run.requestId);
      }
    }
    return closed;
  }

  /**
   * Ends a run nobody executes (its instance died, or it was paused and then cancelled): the
   * assistant message is built from the chunks it stored, and the closing events are appended.
   */
  async closeFromStoredEvents(run: { requestId: string; conversationId: string; projectId: string }, status: 'failed' | 'cancelled', reason: CloseReason = 'lease_expired'): Promise<void> {
    const lost = INSTANCE_LOST_MESSAGE + BECAUSE[reason];
    const stored = await this.events.listAfter(run.requestId, 0, 1_000_000);
    // a fork's answer starts with its parent's text up to the checkpoint, as if it had run to the end
    const row = await this.runs.findById(run.requestId);
    const prefix = row ? await forkPrefix(this.runs, this.events, row) : '';
    const content = prefix + textUpTo(stored, Infinity);
    const stopReason = status === 'failed' ? 'error' : 'cancelled';
    const steps = new TurnStepsRecorder(TurnStepsRecorder.fromStored(liveEvents(stored), Infinity, prefix.length));
    if (status === 'failed') steps.apply('error', { code: 'instance_lost', message: lost });
    const { message } = await this.conversations.insertAssistantOnce(run.conversationId, run.requestId, content, status === 'failed' ? 'error' : 'cancelled', {
      stopReason,
      ...(status === 'failed' ? { error: 'instance_lost' } : {}),
      steps: steps.steps(),
      ...(row?.parentRequestId && { forkOf: { requestId: row.parentRequestId, phaseIndex: row.forkedFromPhaseIndex ?? 0 } }),
    });
    // the webhook the closing statement wrote waits for this answer
    await this.webhooks.release(run.requestId, content);
    const last = stored.at(-1);
    if (last?.type !== 'done') {
      const state: EnvelopeState = {
        phase: (last?.data.phase as PhaseName) ?? 'action_phase',
        phaseIndex: Number(last?.data.phaseIndex ?? 0),
        cycleIndex: Number(last?.data.cycleIndex ?? 0),
      };
      let seq = last?.seq ?? 0;
      const closing = [];
      if (status === 'failed') {
        seq += 1;
        closing.push({ seq, type: 'error', data: runEnvelope(run, seq, state, { type: 'error', code: 'instance_lost', message: lost, retryable: true }) });
      }
      seq += 1;
      closing.push({ seq, type: 'done', data: runEnvelope(run, seq, state, { type: 'done', fullContent: content, messageId: message.id, stopReason, usage: emptyUsage() }) });
      await this.events.insertMany(run.requestId, closing);
      await this.runs.setLastSeq(run.requestId, seq);
    }
    this.bus.end(run.requestId);
    this.trace.record({
      requestId: run.requestId,
      projectId: run.projectId,
      type: status === 'failed' ? 'run_failed' : 'run_cancelled',
      details: { reason: status === 'failed' ? 'lease_expired' : 'cancelled_while_paused', ...(status === 'failed' && reason !== 'lease_expired' && { notContinued: reason }), messageId: message.id },
    });
    if (status === 'failed') this.logger.warn(`run ${run.requestId} closed: its instance's lease expired${BECAUSE[reason]}`);
  }
}
