import { HttpStatus, Inject, Injectable, Logger, ServiceUnavailableException } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import type { Observable } from 'rxjs';
import type { ClientFlow } from '../common/sse/client-flow';
import type { LlmMessage } from '../llm/llm-adapter.port';
import { contextBudget, trimHistory } from '../orchestration/context-budget';
import { OrchestrationService } from '../orchestration/orchestration.service';
import type { SentEvent } from '../runs/run-event-bus.service';
import { RunsService } from '../runs/runs.service';
import { TRACE_SINK, type TraceSink } from '../trace/trace-sink.port';
import { ChatException, ChatExceptionCode, modelNotAllowed } from './chat.exception';
import type { SendMessageDto } from './dto/send-message.dto';
import type { ConversationEntity, ConversationSettings } from './entities/conversation.entity';
import { ConversationRepository } from './repositories/conversation.repository';
import { CommandStrategy, isCommand } from './commands/command.strategy';
import { WebhookSettingsService } from '../webhooks/webhook-settings.service';
import { OrionException } from '../common/errors/orion.exception';
import { TurnGate, type OpenTurn, type TurnRequest } from './turn-gate.service';
import type { EntityManager } from 'typeorm';
import { AppConfigService } from '../config/app-config.service';
import { IdempotencyKeyStore } from '../database/idempotency-key.store';
import type { IdempotentSend } from '../common/idempotency/idempotency-key';
import { RunRepository } from '../runs/repositories/run.repository';
import { RunEventsService } from '../runs/run-events.service';
import { ConversationTurnRepository } from './repositories/conversation-turn.repository';
import { BudgetGate } from './budgets/budget-gate.service';
import type { TurnBudgets } from '../orchestration/protocol-strategy';
import { claimOrFollow } from './idempotent-send';
import { turnHistory } from './turn-history';

export type ChatProtocol = 'two-stage' | 'unified';

/** How an edge sends (see ChatService.send); `keyId`: the API key that sent it (its budget; stored with the run). */
export interface SendOptions {
  createMissing?: boolean;
  history?: LlmMessage[];
  instructions?: string;
  idempotency?: IdempotentSend;
  keyId?: string | null;
  /** a repeated send (same Idempotency-Key) replays its run without what a takeover superseded: for an edge that cannot take back what it sent (the UI stream) */
  replayLive?: boolean;
}

/** A turn's run, opened with its user message, and the history it follows. */
interface OpenedTurn {
  conversationId: string;
  userMessageId: string;
  history: LlmMessage[];
  lastTurnTools: string[];
}

/** How a message was decided: its turn started, or it waits in its conversation's queue. */
type Decided = { settings: ConversationSettings | undefined; model: string; contextWindow: number } & (
  | { started: OpenedTurn }
  | { queued: { position: number; activeRequestId: string }; request: TurnRequest; open: OpenTurn<OpenedTurn> }
);

/**
 * Starts chat turns: resolves the conversation, stores the user message, opens the run, has
 * orchestration build the turn and the run engine run it. Everything that can be refused is
 * refused before the first event. Returns the run's events; the edge streams them. The turns
 * that continue a run from a checkpoint (resume, fork, takeover) are RunContinuationService's.
 */
@Injectable()
export class ChatService {
  private readonly logger = new Logger('Chat');

  constructor(
    private readonly conversations: ConversationRepository,
    private readonly runs: RunsService,
    private readonly orchestration: OrchestrationService,
    @Inject(TRACE_SINK) private readonly trace: TraceSink,
    private readonly commands: CommandStrategy,
    private readonly webhooks: WebhookSettingsService,
    private readonly gate: TurnGate,
    private readonly keys: IdempotencyKeyStore,
    private readonly runRows: RunRepository,
    private readonly runEvents: RunEventsService,
    private readonly queuedTurns: ConversationTurnRepository,
    private readonly config: AppConfigService,
    private readonly budgetGate: BudgetGate,
  ) {}

  /**
   * `opts.createMissing`: a `conversationId` that names no conversation yet starts one with that
   * id (edges whose clients name their chats, e.g. the AI SDK's chat id), in the same statement
   * as the turn; without it an unknown id is a 404.
   * `opts.history`: the turn's history as the caller gives it (edges whose clients send the whole
   * conversation, e.g. OpenAI's chat completions), trimmed to the budget like stored history,
   * instead of the conversation's stored messages. `opts.instructions`: added to the system
   * prompt after the conversation's custom instructions.
   * `opts.idempotency`: the send's `Idempotency-Key`. The first send with it starts the turn, which
   * then runs as if detached (its client leaving does not cancel it: a retry is expected); a later
   * send with the same key and fingerprint, on any instance, gets that run's events instead, from
   * its first, live until it ends (the reconnect reader); another fingerprint is a 422.
   */
  async send(
    protocolName: ChatProtocol,
    dto: SendMessageDto,
    flow: ClientFlow,
    clientGone: AbortSignal,
    opts: SendOptions = {},
  ): Promise<Observable<SentEvent>> {
    const projectId = dto.projectId ?? 'default';
    const requestId = randomUUID();
    if (!opts.idempotency) return this.sendAs(requestId, protocolName, dto, flow, clientGone, opts);
    const claim = { projectId, key: opts.idempotency.key, fingerprint: opts.idempotency.fingerprint, requestId, windowMs: this.config.get('IDEMPOTENCY_WINDOW_MS') };
    const replay = await this.dbOrUnavailable(() => claimOrFollow({ keys: this.keys, runs: this.runRows, events: this.runEvents, queued: this.queuedTurns }, claim, flow, clientGone, !!opts.replayLive));
    if (replay) return replay;
    try {
      return await this.sendAs(requestId, protocolName, dto, flow, clientGone, opts);
    } catch (err) {
      // refused before its turn started: nothing was stored, and a retry may try again
      await this.keys.release(projectId, claim.key, requestId).catch((e: unknown) => this.logger.warn(`could not release idempotency key of ${requestId}: ${(e as Error).message}`));
      throw err;
    }
  }

  /**
   * A send under a project or key budget reserves its turn's worst case first (429
   * budget_exhausted when it does not fit, before anything is stored or any model is called) and
   * runs with the turn budget its reservation covers; refused later, it releases the reservation.
   */
  private async sendAs(requestId: string, protocolName: ChatProtocol, dto: SendMessageDto, flow: ClientFlow, clientGone: AbortSignal, opts: SendOptions): Promise<Observable<SentEvent>> {
    const budgets = this.orchestration.budgets(dto.options ?? {});
    const projectId = dto.projectId ?? 'default';
    // a /command never reaches a model
    const admission = isCommand(dto.content) ? null : await this.dbOrUnavailable(() => this.budgetGate.admit(requestId, projectId, opts.keyId ?? null, budgets.turnTokenBudget, this.orchestration.prices()));
    if (!admission) return this.sendAdmitted(requestId, protocolName, dto, flow, clientGone, opts, budgets);
    try {
      return await this.sendAdmitted(requestId, protocolName, dto, flow, clientGone, opts, { ...budgets, turnTokenBudget: admission.turnTokenBudget });
    } catch (err) {
      await this.budgetGate.release(requestId).catch((e: unknown) => this.logger.warn(`could not release the budget reservation of ${requestId}: ${(e as Error).message}`));
      throw err;
    }
  }

  private async sendAdmitted(
    requestId: string,
    protocolName: ChatProtocol,
    dto: SendMessageDto,
    flow: ClientFlow,
    clientGone: AbortSignal,
    opts: SendOptions,
    budgets: TurnBudgets,
  ): Promise<Observable<SentEvent>> {
    const projectId = dto.projectId ?? 'default';
    // a leading /command goes to the command registry, never to the model
    const protocol = isCommand(dto.content) ? this.commands : this.orchestration.protocol(protocolName);
    const options = dto.options ?? {};
    const mode = dto.mode ?? 'act';
    // a send named by a key runs on when its client leaves: its retry follows it
    const detach = !!options.detach || !!opts.idempotency;
    const debugShowToolResults = !!options.debugShowToolResults;
    if (options.model !== undefined && !this.orchestration.allowsModel(options.model)) {
      throw modelNotAllowed(options.model, this.orchestration.modelNames(), 'options.model');
    }
    if (dto.webhookUrl !== undefined) await this.dbOrUnavailable(() => this.webhooks.checkTarget(dto.webhookUrl!, projectId));

    const runOptions = {
      mode,
      budgets,
      debugShowToolResults,
      detach,
      ...(options.approvalTimeoutMs !== undefined && { approvalTimeoutMs: options.approvalTimeoutMs }),
      ...(dto.webhookUrl !== undefined && { webhookUrl: dto.webhookUrl }),
    };
    const decided = await this.dbOrUnavailable(async (): Promise<Decided> => {
      let conversation: Pick<ConversationEntity, 'id' | 'projectId' | 'settings'> | null = null;
      if (dto.conversationId) {
        conversation = await this.conversations.findById(dto.conversationId);
        if (conversation ? conversation.projectId !== projectId : !opts.createMissing) {
          throw new ChatException(ChatExceptionCode.CONVERSATION_NOT_FOUND, `Conversation ${dto.conversationId} not found in project ${projectId}`);
        }
      }
      const model = this.pickModel(options.model, conversation?.settings?.model);
      const contextWindow = await this.orchestration.contextWindow(model);
      const turn = { protocol: protocol.name, options: { ...runOptions, model } };
      // the conversation (when new), the user message and the run: one statement, all or nothing;
      // an existing conversation's history is read in the transaction that lets the turn start
      const open = async (m?: EntityManager): Promise<OpenedTurn> => {
        const { history, lastTurnTools } = opts.history
          ? { history: trimHistory(opts.history, contextBudget(contextWindow).historyTokens), lastTurnTools: [] }
          : conversation
            ? await turnHistory(this.conversations, conversation.id, contextWindow, m)
            : { history: [], lastTurnTools: [] };
        const opening = this.conversations.opening({ conversation: conversation ?? { projectId, title: dto.content, newId: dto.conversationId }, content: dto.content, requestId });
        await this.runs.open({ requestId, conversationId: opening.conversationId, projectId, userMessageId: opening.userMessageId, keyId: opts.keyId ?? null, ...turn }, opening.prelude, m).catch((err: unknown) => {
          // the conversation was deleted after it was read: nothing was stored, and it is gone
          if (dto.conversationId && isForeignKeyViolation(err)) throw new ChatException(ChatExceptionCode.CONVERSATION_NOT_FOUND, `Conversation ${dto.conversationId} not found in project ${projectId}`);
          throw err;
        });
        return { conversationId: opening.conversationId, userMessageId: opening.userMessageId, history, lastTurnTools };
      };
      if (!conversation) return { settings: undefined, model, contextWindow, started: await open() };
      // one turn at a time: the conversation's active turn decides whether this one starts now
      const request = { requestId, conversationId: conversation.id, projectId, content: dto.content, strategy: options.multitask, turn };
      return { settings: conversation.settings, model, contextWindow, open, request, ...(await this.gate.admit(request, open)) };
    });

    const begin = (opened: OpenedTurn, gone: AbortSignal): Observable<SentEvent> => {
      const { model, contextWindow, settings } = decided;
      const conversationId = opened.conversationId;
      this.trace.record({ requestId, projectId, type: 'run_started', details: { protocol: protocol.name, conversationId, budgets, mode, model } });
      const messages: LlmMessage[] = [...opened.history, { role: 'user', content: dto.content }];
      const turn = this.orchestration.buildTurn({
        protocol,
        requestId,
        projectId,
        conversationId,
        messages,
        mode,
        budgets,
        debugShowToolResults,
        systemContext: [settings?.customInstructions, opts.instructions].filter((x) => !!x).join('\n\n') || undefined,
        orchestratorEnabled: settings?.orchestratorEnabled,
        contextWindow,
        lastTurnTools: opened.lastTurnTools,
        model,
      });
      return this.runs.start(
        {
          requestId,
          projectId,
          conversationId,
          turn,
          detach,
          opening: [{ type: 'start', protocol: protocol.name, userMessageId: opened.userMessageId, model: turn.model }],
          lastSeq: 0,
          priorContent: '',
          approvals: { setting: settings?.approvals ?? 'policy', timeoutMs: options.approvalTimeoutMs },
        },
        flow,
        gone,
      );
    };
    if ('started' in decided) return begin(decided.started, clientGone);
    return this.gate.queuedStream({ ...decided.request, detach }, decided.queued, decided.open, async (opened, gone) => begin(opened, gone), clientGone);
  }

  /**
   * The turn's model: the message's option, else the conversation's setting, else the default.
   * A setting that LLM_MODELS no longer allows is refused like a bad option, not silently swapped.
   */
  private pickModel(option: string | undefined, setting: string | undefined): string {
    if (option !== undefined) return option;
    if (setting === undefined) return this.orchestration.defaultModel();
    if (!this.orchestration.allowsModel(setting)) throw modelNotAllowed(setting, this.orchestration.modelNames(), 'the conversation setting model');
    return setting;
  }

  /** A database failure before the stream starts is a 503 that says so, not a 500. */
  private async dbOrUnavailable<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      // a domain refusal (chat's, or the webhook check's) is not a database failure
      if (err instanceof OrionException) throw err;
      this.logger.error(`database error before the stream started: ${(err as Error).message}`);
      throw new ServiceUnavailableException({ statusCode: HttpStatus.SERVICE_UNAVAILABLE, error: 'database_unavailable', message: 'The database is unavailable; nothing was stored. Retry later.' });
    }
  }
}

/** PostgreSQL's foreign_key_violation (TypeORM's QueryFailedError carries the driver's code). */
function isForeignKeyViolation(err: unknown): boolean {
  const e = err as { code?: unknown; driverError?: { code?: unknown } } | null;
  return e?.code === '23503' || e?.driverError?.code === '23503';
}
