/**
 * How a run continues from a checkpoint: the checks that a resume, a fork or a takeover may
 * continue it (the refusals list its checkpoints), the plan read through its protocol, and the
 * claim or fork that says where it goes on. Runs nothing: RunsService and chat do.
 */
import { Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { AppConfigService } from '../config/app-config.service';
import { OrchestrationService } from '../orchestration/orchestration.service';
import type { ProtocolStrategy } from '../orchestration/protocol-strategy';
import { CheckpointFormatError } from '../orchestration/run-state/run-checkpoint';
import type { RunEntity } from './entities/run.entity';
import { RunEventRepository } from './repositories/run-event.repository';
import { RunRepository } from './repositories/run.repository';
import { forkPrefix } from './fork-prefix';
import { checkpointsOf, forkHint, interruptedCall, pointOf, runCancelled, takeoverPointOf, type ResumePlan, type ResumePoint } from './resume-plan';
import { INSTANCE_ID } from './run-lease';
import { TakeoverRefused } from './run-sweeper.service';
import { requireRun, RunsException, RunsExceptionCode } from './runs.exception';

type CheckpointReader = Required<Pick<ProtocolStrategy, 'readCheckpoint'>>;

@Injectable()
export class RunPlansService {
  constructor(
    private readonly runs: RunRepository,
    private readonly events: RunEventRepository,
    private readonly orchestration: OrchestrationService,
    private readonly config: AppConfigService,
  ) {}

  /**
   * Checks that a paused run can resume in place from the checkpoint of `phaseIndex`: its latest
   * one only (from an older one, the tools that ran after it would be forgotten or run twice in
   * one run). A cancelled run is never resumed: the user stopped it. Continuing a finished run,
   * or from an older checkpoint, is a fork (`planFork`), a request of its own; the refusals here
   * say so and list the checkpoints.
   */
  async planResume(requestId: string, phaseIndex: number): Promise<ResumePlan> {
    const run = await requireRun(this.runs, requestId);
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
    const run = await requireRun(this.runs, requestId);
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
   * Where a run whose instance died continues: its latest checkpoint (the turn's start, phase 0,
   * counts: a run cut off in its first action phase runs it again), and the point after what it
   * stored up to there. Refused (TakeoverRefused) when a call started after that checkpoint.
   */
  async planTakeover(run: RunEntity): Promise<{ plan: ResumePlan; point: ResumePoint; phaseIndex: number }> {
    const phaseIndex = checkpointsOf(run, true).at(-1);
    const state = phaseIndex === undefined ? undefined : run.checkpoint?.byPhase[String(phaseIndex)];
    if (phaseIndex === undefined || state === undefined) throw new Error(`run ${run.requestId} has no checkpoint to continue from`);
    const plan = this.readPlan(run, this.checkpointReader(run, 'takeover'), phaseIndex, state, false);
    const stored = await this.events.listAfter(run.requestId, 0, 1_000_000);
    // never run twice by accident: a call started after the checkpoint may or may not have run
    // (not while the run waits for a person: it waits in the phase of its checkpoint, two-stage's
    // pending call or the unified step stored as it asked, so none of its calls is after it),
    // unless its protocol answers such calls itself (unified, from the checkpoint before its
    // step's calls ran: it runs read-only ones again and tells the model the others were cut off;
    // two-stage, from the checkpoint stored as a call started)
    const answers = plan.answersStartedCalls === true && run.status === 'running';
    const interrupted = answers ? undefined : interruptedCall(stored, phaseIndex, run.status === 'running' ? run : undefined, plan);
    if (interrupted) throw new TakeoverRefused('tool_interrupted', `run ${run.requestId} was cut off while ${interrupted} ran; it is not run again`);
    const point = takeoverPointOf(stored, phaseIndex, plan.cutCallId);
    return { plan, phaseIndex, point: { ...point, priorContent: (await forkPrefix(this.runs, this.events, run)) + point.priorContent } };
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

  /** The protocols that continue a run from a checkpoint (the ones a takeover continues). */
  resumableProtocols(): string[] {
    return this.orchestration.protocolNames().filter((n) => this.strategyOf(n)?.capabilities.resume);
  }

  /** The run's protocol; undefined for one orchestration does not dispatch (chat commands). */
  strategyOf(protocol: string): ProtocolStrategy | undefined {
    return this.orchestration.protocolNames().includes(protocol) ? this.orchestration.protocol(protocol) : undefined;
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
        ...(read.checkpointsEachCall && { checkpointsEachCall: true }),
      };
    } catch (err) {
      if (err instanceof CheckpointFormatError) throw new RunsException(RunsExceptionCode.RUN_NOT_RESUMABLE, `The checkpoint at phase ${phaseIndex} cannot be read: ${err.message}`);
      throw err;
    }
  }
}
