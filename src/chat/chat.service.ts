import { HttpStatus, Inject, Injectable, Logger, Optional, ServiceUnavailableException } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import type { Response } from 'express';
import { AppConfigService } from '../config/app-config.service';
import { SseWriter } from '../common/sse/sse-writer';
import { LLM_ADAPTER, type LlmAdapter, type LlmMessage } from '../llm/llm-adapter.port';
import { contextBudget, trimHistory } from '../orchestration/context-budget';
import { OrchestrationService } from '../orchestration/orchestration.service';
import type { ProtocolExecutionContext, TurnBudgets } from '../orchestration/protocol-strategy';
import { TOOL_RUNNER, type ToolRunner } from '../tools/tool-runner.port';
import { TRACE_SINK, type TraceSink } from '../trace/trace-sink.port';
import { KNOWLEDGE_RETRIEVER, type KnowledgeRetriever } from '../knowledge/knowledge-retriever.port';
import { CheckpointFormatError, parseTwoStageCheckpoint } from '../orchestration/run-state/run-checkpoint';
import type { ChatMode } from '../orchestration/protocol-strategy';
import type { PhaseName } from '../orchestration/protocol-event';
import { ChatException, ChatExceptionCode } from './chat.exception';
import type { ResumeRunDto, SendMessageDto } from './dto/send-message.dto';
import type { ConversationEntity } from './entities/conversation.entity';
import { ConversationRepository } from './repositories/conversation.repository';
import { RunRepository } from './repositories/run.repository';
import { RunEventRepository } from './repositories/run-event.repository';
import { INSTANCE_ID, RunExecutorService } from './run-executor.service';
import { CommandStrategy, isCommand } from './commands/command.strategy';

export type ChatProtocol = 'two-stage' | 'unified';

/** At most this many stored messages are read back as history before the token budget trims them. */
const HISTORY_FETCH_LIMIT = 200;

/**
 * Starts chat turns: resolves the conversation, stores the user message, opens the run, then
 * hands the protocol generator to the executor, which streams it over SSE. Everything that can
 * be refused is refused before the first byte of the stream.
 */
@Injectable()
export class ChatService {
  private readonly logger = new Logger('Chat');

  constructor(
    private readonly conversations: ConversationRepository,
    private readonly runs: RunRepository,
    private readonly executor: RunExecutorService,
    private readonly orchestration: OrchestrationService,
    private readonly config: AppConfigService,
    @Inject(LLM_ADAPTER) private readonly llm: LlmAdapter,
    @Inject(TOOL_RUNNER) private readonly tools: ToolRunner,
    @Inject(TRACE_SINK) private readonly trace: TraceSink,
    private readonly runEvents: RunEventRepository,
    private readonly commands: CommandStrategy,
    @Optional() @Inject(KNOWLEDGE_RETRIEVER) private readonly knowledge?: KnowledgeRetriever,
  ) {}

  async send(protocolName: ChatProtocol, dto: SendMessageDto, res: Response): Promise<void> {
    const projectId = dto.projectId ?? 'default';
    // a leading /command goes to the command registry, never to the model
    const strategy = isCommand(dto.content) ? this.commands : this.orchestration.protocol(protocolName);
    const requestId = randomUUID();
    const options = dto.options ?? {};
    const defaults = this.defaultBudgets();
    const budgets: TurnBudgets = {
      maxPhaseCycles: options.maxPhaseCycles ?? defaults.maxPhaseCycles,
      maxDuplicateAttempts: options.maxDuplicateAttempts ?? defaults.maxDuplicateAttempts,
      maxIterations: options.maxIterations ?? defaults.maxIterations,
    };

    // the window the model really has (Ollama reports it), never more than configured
    const contextWindow = (await this.llm.capabilities().catch(() => undefined))?.contextWindow ?? this.config.get('LLM_CONTEXT_WINDOW');
    const { conversation, history, userMessageId } = await this.dbOrUnavailable(async () => {
      let conversation: ConversationEntity | null = null;
      if (dto.conversationId) {
        conversation = await this.conversations.findById(dto.conversationId);
        if (!conversation || conversation.projectId !== projectId) {
          throw new ChatException(ChatExceptionCode.CONVERSATION_NOT_FOUND, `Conversation ${dto.conversationId} not found in project ${projectId}`);
        }
      }
      const history = conversation ? await this.history(conversation.id, contextWindow) : [];
      conversation ??= await this.conversations.create(projectId, dto.content);
      const user = await this.conversations.insertUserMessage(conversation.id, dto.content, requestId);
      await this.runs.create({
        requestId,
        conversationId: conversation.id,
        projectId,
        userMessageId: user.id,
        protocol: strategy.name,
        options: { mode: dto.mode ?? 'act', budgets, debugShowToolResults: !!options.debugShowToolResults, detach: !!options.detach },
        leaseOwner: INSTANCE_ID,
        leaseMs: this.config.get('RUN_LEASE_MS'),
      });
      return { conversation, history, userMessageId: user.id };
    });

    this.trace.record({ requestId, projectId, type: 'run_started', details: { protocol: strategy.name, conversationId: conversation.id, budgets, mode: dto.mode ?? 'act' } });
    const messages: LlmMessage[] = [...history, { role: 'user', content: dto.content }];
    const sse = new SseWriter(res);
    await this.executor.execute({
      requestId,
      projectId,
      conversationId: conversation.id,
      protocol: strategy,
      sse,
      detach: !!options.detach,
      opening: [{ type: 'start', protocol: strategy.name, userMessageId }],
      lastSeq: 0,
      priorContent: '',
      context: this.contextFactory({
        requestId,
        projectId,
        conversation,
        messages,
        mode: dto.mode ?? 'act',
        budgets,
        debugShowToolResults: !!options.debugShowToolResults,
        contextWindow,
      }),
    });
  }

  /**
   * Continues a paused two-stage run from the checkpoint taken at `resumeFromPhaseIndex`, on
   * this instance: messages, counters and refused signatures come from the checkpoint, seq
   * continues after the last stored event, and a completed tool is never run again. Exactly
   * one concurrent resume wins (an atomic paused → running claim); the others get 409.
   */
  async resume(dto: ResumeRunDto, res: Response): Promise<void> {
    const run = await this.runs.findById(dto.requestId);
    if (!run) throw new ChatException(ChatExceptionCode.RUN_NOT_FOUND, `Run ${dto.requestId} not found`);
    if (run.protocol !== 'two-stage') throw new ChatException(ChatExceptionCode.RUN_NOT_RESUMABLE, `Run ${dto.requestId} uses ${run.protocol}; only two-stage runs can be resumed`);
    if (run.status === 'completed' || run.status === 'cancelled' || run.status === 'failed') {
      throw new ChatException(ChatExceptionCode.RUN_FINISHED, `Run ${dto.requestId} is ${run.status}; it cannot be resumed`);
    }
    if (run.status === 'running') {
      throw new ChatException(ChatExceptionCode.RESUME_IN_PROGRESS, `Run ${dto.requestId} is running (another resume may have started it); pause it before resuming`);
    }
    const byPhase = (run.checkpoint as { byPhase?: Record<string, unknown> } | null)?.byPhase ?? {};
    const checkpoints = Object.keys(byPhase).map(Number).sort((a, b) => a - b);
    const raw = byPhase[String(dto.resumeFromPhaseIndex)];
    if (raw === undefined) {
      throw new ChatException(ChatExceptionCode.CHECKPOINT_NOT_FOUND, `Run ${dto.requestId} has no checkpoint at phase ${dto.resumeFromPhaseIndex}`, { checkpoints });
    }
    // an older checkpoint would forget tools that ran after it and run them again
    const latest = checkpoints.at(-1)!;
    if (dto.resumeFromPhaseIndex !== latest) {
      throw new ChatException(
        ChatExceptionCode.RUN_NOT_RESUMABLE,
        `Run ${dto.requestId} went on past phase ${dto.resumeFromPhaseIndex}; resume from its latest checkpoint, phase ${latest}`,
        { checkpoints },
      );
    }
    let checkpoint;
    try {
      checkpoint = parseTwoStageCheckpoint(raw);
    } catch (err) {
      if (err instanceof CheckpointFormatError) throw new ChatException(ChatExceptionCode.RUN_NOT_RESUMABLE, `The checkpoint at phase ${dto.resumeFromPhaseIndex} cannot be read: ${err.message}`);
      throw err;
    }
    const conversation = await this.conversations.findById(run.conversationId);
    if (!conversation) throw new ChatException(ChatExceptionCode.CONVERSATION_NOT_FOUND, `Conversation ${run.conversationId} not found`);
    if (!(await this.runs.claimForResume(run.requestId, INSTANCE_ID, this.config.get('RUN_LEASE_MS')))) {
      throw new ChatException(ChatExceptionCode.RESUME_IN_PROGRESS, `Run ${dto.requestId} is being resumed by another request`);
    }

    const stored = await this.runEvents.listAfter(run.requestId, 0, 1_000_000);
    const last = stored.at(-1);
    const priorContent = stored
      .filter((e) => e.type === 'chunk' && Number(e.data.phaseIndex) <= dto.resumeFromPhaseIndex)
      .map((e) => String(e.data.content ?? ''))
      .join('');
    const opts = run.options as { mode?: ChatMode; budgets?: TurnBudgets; debugShowToolResults?: boolean; detach?: boolean };
    const strategy = this.orchestration.protocol(run.protocol);
    this.trace.record({ requestId: run.requestId, projectId: run.projectId, type: 'run_resumed', details: { resumeFromPhaseIndex: dto.resumeFromPhaseIndex, lastSeq: last?.seq ?? 0 } });
    const sse = new SseWriter(res);
    await this.executor.execute({
      requestId: run.requestId,
      projectId: run.projectId,
      conversationId: run.conversationId,
      protocol: strategy,
      sse,
      detach: !!opts.detach,
      opening: [{ type: 'start', protocol: strategy.name, userMessageId: run.userMessageId, resumed: true, resumeFromPhaseIndex: dto.resumeFromPhaseIndex }],
      lastSeq: last?.seq ?? 0,
      envelope: last
        ? { phase: last.data.phase as PhaseName, phaseIndex: Number(last.data.phaseIndex), cycleIndex: Number(last.data.cycleIndex) }
        : undefined,
      priorContent,
      context: this.contextFactory({
        requestId: run.requestId,
        projectId: run.projectId,
        conversation,
        messages: checkpoint.baseMessages,
        mode: opts.mode ?? 'act',
        budgets: opts.budgets ?? this.defaultBudgets(),
        debugShowToolResults: !!opts.debugShowToolResults,
        resumeFrom: { phaseIndex: dto.resumeFromPhaseIndex, state: raw as Record<string, unknown> },
      }),
    });
  }

  private defaultBudgets(): TurnBudgets {
    return {
      maxPhaseCycles: this.config.get('MAX_PHASE_CYCLES_PER_TURN'),
      maxDuplicateAttempts: this.config.get('MAX_DUPLICATE_ATTEMPTS'),
      maxIterations: this.config.get('MAX_ITERATIONS'),
    };
  }

  /** The protocol context of a turn, around the run's signal and control. */
  private contextFactory(p: {
    requestId: string;
    projectId: string;
    conversation: ConversationEntity;
    messages: LlmMessage[];
    mode: ChatMode;
    budgets: TurnBudgets;
    debugShowToolResults: boolean;
    resumeFrom?: ProtocolExecutionContext['resumeFrom'];
    contextWindow?: number;
  }): (signal: AbortSignal, control: ProtocolExecutionContext['control']) => ProtocolExecutionContext {
    return (signal, control) => ({
      requestId: p.requestId,
      projectId: p.projectId,
      conversationId: p.conversation.id,
      messages: p.messages,
      mode: p.mode,
      llm: this.llm,
      tools: this.tools,
      trace: this.trace,
      budgets: p.budgets,
      debugShowToolResults: p.debugShowToolResults,
      signal,
      control,
      resumeFrom: p.resumeFrom,
      systemContext: p.conversation.settings?.customInstructions,
      flags: { orchestratorEnabled: p.conversation.settings?.orchestratorEnabled ?? this.config.get('ORCHESTRATOR_ENABLED') },
      knowledge: this.knowledge,
      contextWindow: p.contextWindow ?? this.config.get('LLM_CONTEXT_WINDOW'),
    });
  }

  /** Stored history as model messages, trimmed to the history share of the context window. */
  private async history(conversationId: string, contextWindow: number): Promise<LlmMessage[]> {
    const rows = await this.conversations.recentMessages(conversationId, HISTORY_FETCH_LIMIT);
    const msgs: LlmMessage[] = rows
      .filter((m) => m.content.trim().length > 0)
      .map((m) => ({ role: m.role, content: m.content }));
    return trimHistory(msgs, contextBudget(contextWindow).historyTokens);
  }

  /** A database failure before the stream starts is a 503 that says so, not a 500. */
  private async dbOrUnavailable<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      if (err instanceof ChatException) throw err;
      this.logger.error(`database error before the stream started: ${(err as Error).message}`);
      throw new ServiceUnavailableException({ statusCode: HttpStatus.SERVICE_UNAVAILABLE, error: 'database_unavailable', message: 'The database is unavailable; nothing was stored. Retry later.' });
    }
  }
}
