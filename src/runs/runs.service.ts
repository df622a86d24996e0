import { Inject, Injectable, Logger, Optional } from '@nestjs/common';
import { defer, EMPTY, type Observable } from 'rxjs';
import { fromGenerator } from '../common/sse/from-generator';
import type { ClientFlow } from '../common/sse/client-flow';
import { AppConfigService } from '../config/app-config.service';
import { mapRun, type RunDto } from './dto/run.dto';
import type { RunOptions } from './entities/run.entity';
import type { StatementPrelude } from '../database/statement-prelude';
import type { EntityManager } from 'typeorm';
import { RunEventRepository } from './repositories/run-event.repository';
import { RunRepository } from './repositories/run.repository';
import { RunControlService } from './run-control.service';
import type { SentEvent } from './run-event-bus.service';
import type { ResumePlan, ResumePoint } from './resume-plan';
import { INSTANCE_ID, RunExecutorService, type ExecuteRunParams } from './run-executor.service';
import { RunPlansService } from './run-plans.service';
import { RunSweeperService } from './run-sweeper.service';
import { watchRun } from './run-watch';
import { requireRun, RunsException, RunsExceptionCode } from './runs.exception';
import { cancelledQueuedTurn, QUEUED_TURNS, type QueuedTurns } from './queued-turns.port';

export type StartRunParams = Omit<ExecuteRunParams, 'client'>;
export type { ResumePlan, ResumePoint } from './resume-plan';

/**
 * The run engine's front: opens runs, starts them as streams of stored-then-sent events, and
 * handles status, cancel, pause and resume claims (planned by RunPlansService). Knows nothing of
 * HTTP: the edge turns the returned Observable into SSE and says when the client can take more
 * (ClientFlow) and when it left (the AbortSignal).
 */
@Injectable()
export class RunsService {
  private readonly logger = new Logger(RunsService.name);

  constructor(
    private readonly runs: RunRepository,
    private readonly events: RunEventRepository,
    private readonly executor: RunExecutorService,
    private readonly control: RunControlService,
    private readonly closer: RunSweeperService,
    private readonly plans: RunPlansService,
    private readonly config: AppConfigService,
    @Optional() @Inject(QUEUED_TURNS) private readonly queued?: QueuedTurns,
  ) {}

  /**
   * Stores a new run, leased to this instance, in one statement with `prelude`'s writes when
   * given, in `m`'s transaction when given.
   */
  async open(
    r: { requestId: string; conversationId: string; projectId: string; userMessageId: string | null; protocol: string; options: RunOptions; keyId?: string | null },
    prelude?: StatementPrelude,
    m?: EntityManager,
  ): Promise<void> {
    await this.runs.create({ ...r, leaseOwner: INSTANCE_ID, leaseMs: this.config.get('RUN_LEASE_MS') }, prelude, m);
  }

  /**
   * Runs the turn; its events (stored before they are emitted, `seq` = SSE id) come out of the
   * returned Observable, which completes after `done` or `paused`. Unsubscribing (the client
   * left) cancels the run unless it is detached; so does `clientGone` firing before anyone
   * subscribed. The run starts on the first subscription, or without a client then.
   */
  start(p: StartRunParams, flow: ClientFlow, clientGone: AbortSignal): Observable<SentEvent> {
    let started = false;
    let ended = false;
    let finished!: () => void;
    const whenEnded = new Promise<void>((resolve) => (finished = resolve));
    // a detached run outlives its response; so do the turn slots it holds (the run always starts:
    // on the first subscription, or when the client goes before one)
    if (p.detach) flow.outlive?.(whenEnded);
    const run = (client: ExecuteRunParams['client']) => {
      started = true;
      return this.execute({ ...p, client }).finally(() => {
        ended = true;
        finished();
      });
    };
    clientGone.addEventListener('abort', () => void (!started && run(null)), { once: true });
    return defer(() => {
      if (started) return EMPTY;
      const left = new AbortController();
      return fromGenerator(watchRun(p, flow, AbortSignal.any([clientGone, left.signal]), run, () => ended, this.control), { abort: left });
    });
  }

  /**
   * How runs whose instance died are continued (chat builds the turn, as for a resume; runs does
   * not import chat): the sweeper that takes such a run over (it waited for a person, or ran and
   * has a checkpoint) plans it from its latest checkpoint, has `build` make the turn, and runs it
   * here, detached and without a client (followers read it through the reconnect route and the
   * bus). What the dead instance stored of the phase after the checkpoint is superseded by the
   * continuation's `start` (`supersedesFromSeq`). Resolves with the checkpoint's phase index.
   */
  onTakeover(build: (plan: ResumePlan, point: ResumePoint) => Promise<StartRunParams>): void {
    this.closer.registerTakeover(this.plans.resumableProtocols(), async (run) => {
      const { plan, point, phaseIndex } = await this.plans.planTakeover(run);
      const p = await build(plan, point);
      // executes on its own: the executor closes it however it ends
      void this.execute({ ...p, detach: true, client: null }).catch((err: unknown) => this.logger.error(`run ${run.requestId}, taken over: ${(err as Error).message}`));
      // a cancel or pause asked while nobody held the run is carried out before the call can run
      // (the run is attached by now; its lease renewal would only see the flag a third of a lease later)
      if (run.control === 'cancel') this.control.cancelLocal(run.requestId, 'cancelled');
      else if (run.control === 'pause') this.control.pauseLocal(run.requestId);
      return phaseIndex;
    });
  }

  /** Executes the run; a cancel that arrived while it paused is carried out once the pause is stored. */
  private execute(p: ExecuteRunParams): Promise<void> {
    return this.executor.execute(p).then((end) => (end === 'paused' ? this.cancelIfRequestedWhilePausing(p) : undefined));
  }

  async get(requestId: string): Promise<RunDto> {
    const run = await requireRun(this.runs, requestId);
    // A running run's row learns its last seq only with phase events and its end (the hot
    // path stores chunks without touching the row), so read it from the stored events: a
    // client that received seq n must never see a lastSeq below n.
    if (run.status === 'running' || run.status === 'awaiting_approval') run.lastSeq = Math.max(run.lastSeq, await this.events.maxSeq(requestId));
    return mapRun(run, await this.runs.forksOf(requestId));
  }

  /**
   * Stores the cancel flag and aborts the run if it executes here. A paused run is cancelled at
   * once; a turn still queued behind its conversation's active turn leaves the queue.
   */
  async cancel(requestId: string): Promise<RunDto> {
    const queued = this.queued && !(await this.runs.findById(requestId)) ? await this.queued.cancel(requestId) : undefined;
    if (queued) return cancelledQueuedTurn(requestId, queued);
    let r = await requireRun(this.runs, requestId);
    if (r.status === 'running' || r.status === 'awaiting_approval') {
      if (await this.runs.requestControl(requestId, 'cancel')) {
        if (!this.control.cancelLocal(requestId, 'cancelled')) await this.control.broadcast(requestId, 'cancel');
        return this.get(requestId);
      }
      // it stopped running since it was read: a pause that landed meanwhile is cancelled below
      // rather than left resumable
      r = await requireRun(this.runs, requestId);
    }
    if (r.status === 'paused') {
      // nobody runs it: close it here, keeping what it streamed before the pause
      if (await this.runs.cancelPaused(requestId)) await this.closer.closeFromStoredEvents(r, 'cancelled');
      return this.get(requestId);
    }
    throw new RunsException(RunsExceptionCode.RUN_FINISHED, `Run ${requestId} is already ${r.status}`);
  }

  /**
   * A cancel that was stored while the run was pausing (cancel saw it running; the pause closed
   * it first, keeping the flag) is carried out once the pause is stored: the run is closed as
   * cancelled, as a paused run is cancelled, so the cancel the caller was told about is final.
   */
  private async cancelIfRequestedWhilePausing(p: { requestId: string; conversationId: string; projectId: string }): Promise<void> {
    try {
      if (await this.runs.cancelPausedIfRequested(p.requestId)) await this.closer.closeFromStoredEvents(p, 'cancelled');
    } catch (err) {
      // the flag stays stored: resume still refuses the run, and a cancel call closes it
      this.logger.error(`run ${p.requestId}: could not finish the cancel that arrived while it paused: ${(err as Error).message}`);
    }
  }

  /** Asks a running run to stop at its next natural pause point (protocols that have one). */
  async pause(requestId: string): Promise<RunDto> {
    const r = await requireRun(this.runs, requestId);
    // a run waiting for a person pauses at once: its approval is void, a resume asks again
    if (r.status !== 'running' && r.status !== 'awaiting_approval') {
      throw new RunsException(RunsExceptionCode.RUN_NOT_RESUMABLE, `Run ${requestId} is ${r.status}; only a running run can be paused`);
    }
    if (!this.plans.strategyOf(r.protocol)?.capabilities.pausePoints) {
      throw new RunsException(RunsExceptionCode.RUN_NOT_RESUMABLE, `Run ${requestId} uses ${r.protocol}, which has no pause point; only two-stage runs pause (cancel stops any run)`);
    }
    await this.runs.requestControl(requestId, 'pause');
    if (!this.control.pauseLocal(requestId)) await this.control.broadcast(requestId, 'pause');
    return this.get(requestId);
  }

  /** A paused run's resume in place, checked (RunPlansService.planResume). */
  planResume(requestId: string, phaseIndex: number): Promise<ResumePlan> {
    return this.plans.planResume(requestId, phaseIndex);
  }

  /** A fork from any checkpoint of a run that is not running, checked (RunPlansService.planFork). */
  planFork(requestId: string, phaseIndex: number): Promise<ResumePlan> {
    return this.plans.planFork(requestId, phaseIndex);
  }

  /** Opens the planned fork as a new run, as `requestId` when given (RunPlansService.openFork). */
  openFork(plan: ResumePlan, requestId?: string): Promise<{ requestId: string; point: ResumePoint }> {
    return this.plans.openFork(plan, requestId);
  }

  /** Takes the paused run for this instance (RunPlansService.claimResume). */
  claimResume(plan: ResumePlan): Promise<ResumePoint> {
    return this.plans.claimResume(plan);
  }
}
