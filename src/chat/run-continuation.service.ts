/**
 * Chat turns that continue a run from one of its checkpoints rather than start from a user
 * message: a paused run resumed in place, a fork (a new run from a checkpoint of another), and a
 * run that waited for a person when its instance died, taken over by this instance's sweeper.
 * All three build the same continuation turn (`continuation`); apart from ChatService, which
 * starts new turns (conversation, user message, idempotency, budgets, the turn gate) and shares
 * nothing with these but the orchestration and the run engine.
 */
import { randomUUID } from 'node:crypto';
import { Inject, Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import type { Observable } from 'rxjs';
import type { ClientFlow } from '../common/sse/client-flow';
import { OrchestrationService } from '../orchestration/orchestration.service';
import type { TurnBudgets } from '../orchestration/protocol-strategy';
import type { SentEvent } from '../runs/run-event-bus.service';
import { RunsService, type ResumePlan, type ResumePoint, type StartRunParams } from '../runs/runs.service';
import { TRACE_SINK, type TraceSink } from '../trace/trace-sink.port';
import { BudgetGate } from './budgets/budget-gate.service';
import { ChatException, ChatExceptionCode } from './chat.exception';
import type { ResumeRunDto } from './dto/send-message.dto';
import type { ConversationEntity } from './entities/conversation.entity';
import { ConversationRepository } from './repositories/conversation.repository';

@Injectable()
export class RunContinuationService implements OnModuleInit {
  private readonly logger = new Logger('RunContinuationService');

  constructor(
    private readonly conversations: ConversationRepository,
    private readonly runs: RunsService,
    private readonly orchestration: OrchestrationService,
    private readonly budgetGate: BudgetGate,
    @Inject(TRACE_SINK) private readonly trace: TraceSink,
  ) {}

  /** Runs that waited for a person when their instance died are continued by the sweeper with chat's turns. */
  onModuleInit(): void {
    this.runs.onTakeover((plan, point) => this.takeover(plan, point));
  }

  /**
   * Resumes a paused two-stage run in place from its latest checkpoint, on this instance:
   * messages, counters and refused signatures come from the checkpoint, so a tool completed
   * before it is never run again; seq continues after the last stored event, and exactly one
   * concurrent resume wins (an atomic paused → running claim); the others get 409. A cancelled
   * run is never resumed; a finished run or an older checkpoint is refused too (a fork is
   * asked for on its own route).
   */
  async resume(dto: ResumeRunDto, flow: ClientFlow, clientGone: AbortSignal): Promise<Observable<SentEvent>> {
    return this.continueRun(await this.runs.planResume(dto.requestId, dto.resumeFromPhaseIndex), flow, clientGone);
  }

  /**
   * Forks a two-stage run from the checkpoint of `fromPhaseIndex`: a new run (new requestId,
   * linked to its parent) continues from it on this instance, and the parent, its events and
   * its answer stay as they are.
   */
  async fork(requestId: string, fromPhaseIndex: number, flow: ClientFlow, clientGone: AbortSignal, keyId?: string): Promise<Observable<SentEvent>> {
    const plan = await this.runs.planFork(requestId, fromPhaseIndex);
    // a fork is a new turn that spends: admitted against the project's and the sender's budgets as a send is (429 before anything is stored)
    const forkId = randomUUID();
    const budgets = plan.run.options.budgets ?? this.orchestration.budgets();
    const admission = await this.budgetGate.admit(forkId, plan.run.projectId, keyId ?? null, budgets.turnTokenBudget, this.orchestration.prices());
    try {
      return await this.continueRun(plan, flow, clientGone, forkId, admission ? { ...budgets, turnTokenBudget: admission.turnTokenBudget } : undefined);
    } catch (err) {
      // the fork never started: its reservation goes back (ChatService logs the same for a send)
      if (admission) await this.budgetGate.release(forkId).catch((e: unknown) => this.logger.warn(`could not release the budget reservation of fork ${forkId}: ${(e as Error).message}`));
      throw err;
    }
  }

  /** Runs a planned resume or fork (as `forkId`, within `budgets` when a budget admitted it) from its checkpoint. */
  private async continueRun(plan: ResumePlan, flow: ClientFlow, clientGone: AbortSignal, forkId?: string, budgets?: TurnBudgets): Promise<Observable<SentEvent>> {
    const { run } = plan;
    const conversation = await this.conversationOf(run.conversationId);
    const { requestId, point } = plan.fork ? await this.runs.openFork(plan, forkId) : { requestId: run.requestId, point: await this.runs.claimResume(plan) };
    const fork = plan.fork ? { parentRequestId: run.requestId, fromPhaseIndex: plan.phaseIndex } : undefined;
    return this.runs.start(this.continuation(plan, conversation, requestId, point, fork, false, budgets), flow, clientGone);
  }

  /**
   * A run that waited for a person when its instance died, taken over by this instance's
   * sweeper: the same turn as a resume in place, except that it awaits the same approval
   * (`resumeFrom.takeover`) and its `start` says so.
   */
  private async takeover(plan: ResumePlan, point: ResumePoint): Promise<StartRunParams> {
    const conversation = await this.conversationOf(plan.run.conversationId);
    return this.continuation(plan, conversation, plan.run.requestId, point, undefined, true);
  }

  private async conversationOf(conversationId: string): Promise<ConversationEntity> {
    const conversation = await this.conversations.findById(conversationId);
    if (!conversation) throw new ChatException(ChatExceptionCode.CONVERSATION_NOT_FOUND, `Conversation ${conversationId} not found`);
    return conversation;
  }

  /** The turn that continues a claimed run (or its new fork) from the checkpoint of the plan. */
  private continuation(
    plan: ResumePlan,
    conversation: Pick<ConversationEntity, 'settings'>,
    requestId: string,
    point: ResumePoint,
    fork: { parentRequestId: string; fromPhaseIndex: number } | undefined,
    takeover = false,
    budgets?: TurnBudgets,
  ): StartRunParams {
    const { run } = plan;
    // a fork resumed in place is still a fork: its answer names its parent
    const lineage = fork ?? (run.parentRequestId ? { parentRequestId: run.parentRequestId, fromPhaseIndex: run.forkedFromPhaseIndex ?? 0 } : undefined);
    const opts = run.options;
    this.trace.record({
      requestId,
      projectId: run.projectId,
      type: 'run_resumed',
      details: { protocol: run.protocol, resumeFromPhaseIndex: plan.phaseIndex, lastSeq: point.lastSeq, ...(fork && { parentRequestId: fork.parentRequestId }), ...(takeover && { takeover: true }) },
    });
    const turn = this.orchestration.buildTurn({
      protocol: run.protocol,
      requestId,
      projectId: run.projectId,
      conversationId: run.conversationId,
      messages: plan.baseMessages,
      mode: opts.mode ?? 'act',
      budgets: budgets ?? opts.budgets ?? this.orchestration.budgets(),
      debugShowToolResults: !!opts.debugShowToolResults,
      systemContext: conversation.settings?.customInstructions,
      orchestratorEnabled: conversation.settings?.orchestratorEnabled,
      // the model the run started with, when it is still allowed
      model: opts.model !== undefined && this.orchestration.allowsModel(opts.model) ? opts.model : undefined,
      resumeFrom: { phaseIndex: plan.phaseIndex, state: plan.state, ...(fork && { fork: true }), ...(takeover && { takeover: true }), ...(takeover && point.startedCalls && { startedCalls: point.startedCalls }) },
    });
    return {
      requestId,
      projectId: run.projectId,
      conversationId: run.conversationId,
      turn,
      detach: !!opts.detach,
      opening: [
        {
          type: 'start',
          protocol: turn.protocol.name,
          userMessageId: run.userMessageId,
          model: turn.model,
          resumed: true,
          resumeFromPhaseIndex: plan.phaseIndex,
          ...(takeover && { takeover: true }),
          ...(takeover && point.supersedesFromSeq !== undefined && { supersedesFromSeq: point.supersedesFromSeq }),
          ...(fork && { parentRequestId: fork.parentRequestId }),
        },
      ],
      lastSeq: point.lastSeq,
      envelope: point.envelope,
      priorContent: point.priorContent,
      priorSteps: point.priorSteps,
      fork: lineage,
      approvals: { setting: conversation.settings?.approvals ?? 'policy', timeoutMs: opts.approvalTimeoutMs },
    };
  }
}
