import { Inject, Injectable, Logger, Optional } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { defer, EMPTY, type Observable } from 'rxjs';
import { fromGenerator } from '../common/sse/from-generator';
import type { ClientFlow } from '../common/sse/client-flow';
import { AppConfigService } from '../config/app-config.service';
import type { ProtocolStrategy } from '../orchestration/protocol-strategy';
import { OrchestrationService } from '../orchestration/orchestration.service';
import { CheckpointFormatError } from '../orchestration/run-state/run-checkpoint';
import { mapRun, type RunDto } from './dto/run.dto';
import type { RunEntity, RunOptions } from './entities/run.entity';
import type { StatementPrelude } from '../database/statement-prelude';
import type { EntityManager } from 'typeorm';
import { RunEventRepository } from './repositories/run-event.repository';
import { RunRepository } from './repositories/run.repository';
import { RunControlService } from './run-control.service';
import type { SentEvent } from './run-event-bus.service';
import { checkpointsOf, forkHint, interruptedCall, pointOf, runCancelled, takeoverPointOf, type ResumePlan, type ResumePoint } from './resume-plan';
import { INSTANCE_ID, RunExecutorService, type ExecuteRunParams } from './run-executor.service';
import { RunSweeperService, TakeoverRefused } from './run-sweeper.service';
import { BatchHandoff } from './batch-handoff';
import { forkPrefix } from './fork-prefix';
import { RunsException, RunsExceptionCode } from './runs.exception';
import { cancelledQueuedTurn, QUEUED_TURNS, type QueuedTurns } from './queued-turns.port';

export type StartRunParams = Omit<ExecuteRunParams, 'client'>;
export type { ResumePlan, ResumePoint } from './resume-plan';

type CheckpointReader = Required<Pick<ProtocolStrategy, 'readCheckpoint'>>;

/**
 * The run engine's front: opens runs, starts them as streams of stored-then-sent events, and
 * handles status, cancel, pause and resume claims. Knows nothing of HTTP: the edge turns the
 * returned Observable into SSE and says when the client can take more (ClientFlow) and when it
 * left (the AbortSignal).
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
    private readonly orchestration: OrchestrationService,
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
      return this.executor
        .execute({ ...p, client })
        .then((end) => (end === 'paused' ? this.cancelIfRequestedWhilePausing(p) : undefined))
        .finally(() => {
          ended = true;
          finished();
        });
    };
    clientGone.addEventListener('abort', () => void (!started && run(null)), { once: true });
    return defer(() => {
      if (started) return EMPTY;
      const left = new AbortController();
      return fromGenerator(this.watch(p, flow, AbortSignal.any([clientGone, left.signal]), run, () => ended), { abort: left });
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
    const protocols = this.orchestration.protocolNames().filter((n) => this.strategyOf(n)?.capabilities.resume);
    this.closer.registerTakeover(protocols, async (run) => {
      // the turn's start (phase 0) counts: a run cut off in its first action phase runs it again
      const phaseIndex = checkpointsOf(run, true).at(-1);
      const state = phaseIndex === undefined ? undefined : run.checkpoint?.byPhase[String(phaseIndex)];
      if (phaseIndex === undefined || state === undefined) throw new Error(`run ${run.requestId} has no checkpoint to continue from`);
      const plan = this.readPlan(run, this.checkpointReader(run, 'takeover'), phaseIndex, state, false);
      const stored = await this.events.listAfter(run.requestId, 0, 1_000_000);
      // never run twice by accident: a call started after the checkpoint may or may not have run
      // (also while the run waits for a person: a unified step's other calls ran before it asked;
      // a two-stage run waits in the phase of its checkpoint, so none of its calls is after it),
      // unless its protocol answers such calls itself (unified, from the checkpoint before its
      // step's calls ran: it runs read-only ones again and tells the model the others were cut off;
      // two-stage, from the checkpoint stored as a call started)
      const answers = plan.answersStartedCalls === true && run.status === 'running';
      const interrupted = answers ? undefined : interruptedCall(stored, phaseIndex, run.status === 'running' ? run : undefined);
      if (interrupted) throw new TakeoverRefused('tool_interrupted', `run ${run.requestId} was cut off while ${interrupted} ran; it is not run again`);
      const point = takeoverPointOf(stored, phaseIndex, plan.cutCallId);
      const p = await build(plan, { ...point, priorContent: (await forkPrefix(this.runs, this.events, run)) + point.priorContent });
      // executes on its own: the executor closes it however it ends
      void this.executor
        .execute({ ...p, detach: true, client: null })
        .then((end) => (end === 'paused' ? this.cancelIfRequestedWhilePausing(p) : undefined))
        .catch((err: unknown) => this.logger.error(`run ${run.requestId}, taken over: ${(err as Error).message}`));
      // a cancel or pause asked while nobody held the run is carried out before the call can run
      // (the run is attached by now; its lease renewal would only see the flag a third of a lease later)
      if (run.control === 'cancel') this.control.cancelLocal(run.requestId, 'cancelled');
      else if (run.control === 'pause') this.control.pauseLocal(run.requestId);
      return phaseIndex;
    });
  }

  /**
   * The run's events for the client that started it, as the run delivers them. The generator
   * ends with the run (its error is the stream's), or when its client leaves (`left`): then,
   * unless the run is detached, the run is cancelled at once.
   */
  private async *watch(
    p: StartRunParams,
    flow: ClientFlow,
    left: AbortSignal,
    run: (client: NonNullable<ExecuteRunParams['client']>) => Promise<void>,
    ended: () => boolean,
  ): AsyncGenerator<SentEvent> {
    const handoff = new BatchHandoff<SentEvent>();
    const deliver = async (events: SentEvent[]) => {
      flow.hold?.();
      await handoff.put(events);
      await flow.ready();
    };
    const outcome = run({ deliver, gone: left }).then(() => null, (err: unknown) => ({ err }));
    void outcome.then(() => handoff.close());
    const leave = () => {
      handoff.close();
      // a run waiting for a person stays: the decision may come from another device, and the
      // run then goes on without a client (followed through the reconnect route)
      if (!ended() && !p.detach && !this.control.isAwaiting(p.requestId)) this.control.cancelLocal(p.requestId, 'client_disconnected');
    };
    left.addEventListener('abort', leave, { once: true });
    try {
      for (let batch = await handoff.take(); batch; batch = await handoff.take()) yield* batch;
      const failed = ended() ? await outcome : null;
      if (failed) throw failed.err;
    } finally {
      left.removeEventListener('abort', leave);
      handoff.close();
    }
  }

  async get(requestId: string): Promise<RunDto> {
    const run = await this.require(requestId);
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
    let r = await this.require(requestId);
    if (r.status === 'running' || r.status === 'awaiting_approval') {
      if (await this.runs.requestControl(requestId, 'cancel')) {
        if (!this.control.cancelLocal(requestId, 'cancelled')) await this.control.broadcast(requestId, 'cancel');
        return this.get(requestId);
      }
      // it stopped running since it was read: a pause that landed meanwhile is cancelled below
      // rather than left resumable
      r = await this.require(requestId);
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
    const r = await this.require(requestId);
    // a run waiting for a person pauses at once: its approval is void, a resume asks again
    if (r.status !== 'running' && r.status !== 'awaiting_approval') {
      throw new RunsException(RunsExceptionCode.RUN_NOT_RESUMABLE, `Run ${requestId} is ${r.status}; only a running run can be paused`);
    }
    if (!this.strategyOf(r.protocol)?.capabilities.pausePoints) {
      throw new RunsException(RunsExceptionCode.RUN_NOT_RESUMABLE, `Run ${requestId} uses ${r.protocol}, which has no pause point; only two-stage runs pause (cancel stops any run)`);
    }
    await this.runs.requestControl(requestId, 'pause');
    if (!this.control.pauseLocal(requestId)) await this.control.broadcast(requestId, 'pause');
    return this.get(requestId);
  }

  /**
   * Checks that a paused run can resume in place from the checkpoint of `phaseIndex`: its latest
   * one only (from an older one, the tools that ran after it would be forgotten or run twice in
   * one run). A cancelled run is never resumed: the user stopped it. Continuing a finished run,
   * or from an older checkpoint, is a fork (`planFork`), a request of its own; the refusals here
   * say so and list the checkpoints.
   */
  async planResume(requestId: string, phaseIndex: number): Promise<ResumePlan> {
    const run = await this.require(requestId);
    // a cancel is final whatever the run was: said before anything else about it (a run still
    // flagged 'cancel', running or paused, had its cancel accepted; its close is under way)
    if (run.status === 'cancelled' || run.control === 'cancel') throw runCancelled(run);
    const strategy = this.checkpointReader(run);
    if (run.status === 'running' || run.status === 'awaiting_approval') {
      throw new RunsException(RunsExceptionCode.RESUME_IN_PROGRESS, `Run ${requestId} is running (another resume may have started it); pause it before resuming`);
    }
    const checkpoints = checkpointsOf(run);
    if (run.status !== 'paused') {
      throw new RunsException(RunsExceptionCode.RUN_FINISHED, `Run ${requestId} is ${run.status}; only a paused run can be resumed${forkHint(requestId, checkpoints)}`, { checkpoints });
    }
    const state = phaseIndex > 0 ? run.checkpoint?.byPhase[String(phaseIndex)] : undefined;
    if (state === undefined) {
      throw new RunsException(RunsExceptionCode.CHECKPOINT_NOT_FOUND, `Run ${requestId} has no checkpoint at phase ${phaseIndex}`, { checkpoints });
    }
    if (phaseIndex !== checkpoints.at(-1)) {
      throw new RunsException(
        RunsExceptionCode.RUN_NOT_RESUMABLE,
        `Run ${requestId} resumes only from its latest checkpoint (phase ${checkpoints.at(-1)})${forkHint(requestId, checkpoints)}`,
        { checkpoints },
      );
    }
    return this.readPlan(run, strategy, phaseIndex, state, false);
  }

  /**
   * Checks that a new run can be forked from the checkpoint of `phaseIndex`: any checkpoint of
   * a paused, completed, cancelled or failed run. A running run is refused: its checkpoints are
   * still being written, and pausing or cancelling it first is the user's choice.
   */
  async planFork(requestId: string, phaseIndex: number): Promise<ResumePlan> {
    const run = await this.require(requestId);
    const strategy = this.checkpointReader(run);
    if (run.status === 'running' || run.status === 'awaiting_approval') {
      throw new RunsException(RunsExceptionCode.RUN_IN_PROGRESS, `Run ${requestId} is running; pause or cancel it, or let it end, before forking it`, { requestId });
    }
    const checkpoints = checkpointsOf(run);
    const state = phaseIndex > 0 ? run.checkpoint?.byPhase[String(phaseIndex)] : undefined;
    if (state === undefined) {
      const none = checkpoints.length === 0 ? ' (it ran no tool, so it has none)' : '';
      throw new RunsException(RunsExceptionCode.CHECKPOINT_NOT_FOUND, `Run ${requestId} has no checkpoint at phase ${phaseIndex}${none}`, { checkpoints });
    }
    return this.readPlan(run, strategy, phaseIndex, state, true);
  }

  /**
   * How the run's protocol reads its checkpoints; 409 when it cannot continue from one. A person
   * resumes or forks only a protocol with pause points (two-stage); a takeover continues any
   * protocol that keeps checkpoints (unified too: its step checkpoints, issue 44).
   */
  private checkpointReader(run: RunEntity, by: 'person' | 'takeover' = 'person'): CheckpointReader {
    const strategy = this.strategyOf(run.protocol);
    if (!strategy?.capabilities.resume || !strategy.readCheckpoint || (by === 'person' && !strategy.capabilities.pausePoints)) {
      throw new RunsException(RunsExceptionCode.RUN_NOT_RESUMABLE, `Run ${run.requestId} uses ${run.protocol}; only two-stage runs can be resumed or forked`);
    }
    return { readCheckpoint: strategy.readCheckpoint.bind(strategy) };
  }

  /** The plan, once the checkpoint reads as its protocol's state. */
  private readPlan(run: RunEntity, strategy: CheckpointReader, phaseIndex: number, state: Record<string, unknown>, fork: boolean): ResumePlan {
    try {
      const read = strategy.readCheckpoint(state);
      return {
        run,
        phaseIndex,
        fork,
        state,
        baseMessages: read.baseMessages,
        ...(read.cutCallId !== undefined && { cutCallId: read.cutCallId }),
        ...(read.answersStartedCalls && { answersStartedCalls: true }),
      };
    } catch (err) {
      if (err instanceof CheckpointFormatError) throw new RunsException(RunsExceptionCode.RUN_NOT_RESUMABLE, `The checkpoint at phase ${phaseIndex} cannot be read: ${err.message}`);
      throw err;
    }
  }

  /**
   * Opens the fork of a planned resume as a new run of this instance, linked to its parent;
   * the parent is only read. The fork starts where the parent stood at the checkpoint: its
   * answer begins with the text the parent streamed up to that phase.
   */
  async openFork(plan: ResumePlan, requestId: string = randomUUID()): Promise<{ requestId: string; point: ResumePoint }> {
    const parent = plan.run;
    await this.runs.create({
      requestId,
      conversationId: parent.conversationId,
      projectId: parent.projectId,
      userMessageId: parent.userMessageId,
      protocol: parent.protocol,
      options: parent.options,
      leaseOwner: INSTANCE_ID,
      leaseMs: this.config.get('RUN_LEASE_MS'),
      fork: { parentRequestId: parent.requestId, fromPhaseIndex: plan.phaseIndex },
    });
    const upTo = (await this.events.listAfter(parent.requestId, 0, 1_000_000)).filter((e) => Number(e.data.phaseIndex) <= plan.phaseIndex);
    const point = pointOf(upTo, plan.phaseIndex);
    return { requestId, point: { ...point, lastSeq: 0, priorContent: (await forkPrefix(this.runs, this.events, parent)) + point.priorContent } };
  }

  /** Takes the paused run for this instance (exactly one concurrent resume wins) and says where it continues. */
  async claimResume(plan: ResumePlan): Promise<ResumePoint> {
    const { requestId } = plan.run;
    if (!(await this.runs.claimForResume(requestId, INSTANCE_ID, this.config.get('RUN_LEASE_MS')))) {
      // a cancel that landed between the plan and the claim is final too
      if ((await this.runs.findById(requestId))?.status === 'cancelled') throw runCancelled(plan.run);
      throw new RunsException(RunsExceptionCode.RESUME_IN_PROGRESS, `Run ${requestId} is being resumed by another request`);
    }
    const point = pointOf(await this.events.listAfter(requestId, 0, 1_000_000), plan.phaseIndex);
    return { ...point, priorContent: (await forkPrefix(this.runs, this.events, plan.run)) + point.priorContent };
  }

  private async require(requestId: string): Promise<RunEntity> {
    const r = await this.runs.findById(requestId);
    if (!r) throw new RunsException(RunsExceptionCode.RUN_NOT_FOUND, `Run ${requestId} not found`);
    return r;
  }

  /** The run's protocol; undefined for one orchestration does not dispatch (chat commands). */
  private strategyOf(protocol: string): ProtocolStrategy | undefined {
    return this.orchestration.protocolNames().includes(protocol) ? this.orchestration.protocol(protocol) : undefined;
  }
}
