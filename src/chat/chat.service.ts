import { HttpStatus, Inject, Injectable, Logger, ServiceUnavailableException } from '@nestjs/common';
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
import { ChatException, ChatExceptionCode } from './chat.exception';
import type { SendMessageDto } from './dto/send-message.dto';
import type { ConversationEntity } from './entities/conversation.entity';
import { ConversationRepository } from './repositories/conversation.repository';
import { RunRepository } from './repositories/run.repository';
import { INSTANCE_ID, RunExecutorService } from './run-executor.service';

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
  ) {}

  async send(protocolName: ChatProtocol, dto: SendMessageDto, res: Response): Promise<void> {
    const projectId = dto.projectId ?? 'default';
    const strategy = this.orchestration.protocol(protocolName);
    const requestId = randomUUID();
    const options = dto.options ?? {};
    const budgets: TurnBudgets = {
      maxPhaseCycles: options.maxPhaseCycles ?? this.config.get('MAX_PHASE_CYCLES_PER_TURN'),
      maxDuplicateAttempts: options.maxDuplicateAttempts ?? this.config.get('MAX_DUPLICATE_ATTEMPTS'),
      maxIterations: options.maxIterations ?? this.config.get('MAX_ITERATIONS'),
    };

    const { conversation, history, userMessageId } = await this.dbOrUnavailable(async () => {
      let conversation: ConversationEntity | null = null;
      if (dto.conversationId) {
        conversation = await this.conversations.findById(dto.conversationId);
        if (!conversation || conversation.projectId !== projectId) {
          throw new ChatException(ChatExceptionCode.CONVERSATION_NOT_FOUND, `Conversation ${dto.conversationId} not found in project ${projectId}`);
        }
      }
      const history = conversation ? await this.history(conversation.id) : [];
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
      context: (signal, control): ProtocolExecutionContext => ({
        requestId,
        projectId,
        conversationId: conversation.id,
        messages,
        mode: dto.mode ?? 'act',
        llm: this.llm,
        tools: this.tools,
        trace: this.trace,
        budgets,
        debugShowToolResults: !!options.debugShowToolResults,
        signal,
        control,
        systemContext: conversation.settings?.customInstructions,
        flags: { orchestratorEnabled: conversation.settings?.orchestratorEnabled ?? this.config.get('ORCHESTRATOR_ENABLED') },
      }),
    });
  }

  /** Stored history as model messages, trimmed to the history share of the context window. */
  private async history(conversationId: string): Promise<LlmMessage[]> {
    const rows = await this.conversations.recentMessages(conversationId, HISTORY_FETCH_LIMIT);
    const msgs: LlmMessage[] = rows
      .filter((m) => m.content.trim().length > 0)
      .map((m) => ({ role: m.role, content: m.content }));
    return trimHistory(msgs, contextBudget(this.config.get('LLM_CONTEXT_WINDOW')).historyTokens);
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
