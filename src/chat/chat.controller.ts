import { Body, Controller, Delete, Get, HttpCode, type MessageEvent, Param, Patch, Query, RequestMethod, Res, Sse, UseGuards } from '@nestjs/common';
import { SenderKey } from '../common/auth/sender-key.decorator';
import { ApiBadRequestResponse, ApiConflictResponse, ApiNoContentResponse, ApiNotFoundResponse, ApiOkResponse, ApiOperation, ApiServiceUnavailableResponse, ApiTags, ApiTooManyRequestsResponse } from '@nestjs/swagger';
import { IdempotencyKey, type IdempotentSend } from '../common/idempotency/idempotency-key';
import { ApiIdempotentSend, IDEMPOTENCY_CONFLICT } from '../common/idempotency/api-idempotent-send.decorator';
import { ApiSseResponse } from '../common/sse/api-sse-response.decorator';
import { ClientSignal } from '../common/sse/client-signal.decorator';
import { RUN_EVENTS } from '../runs/dto/run-event.dto';
import type { Response } from 'express';
import { StartsTurn } from '../common/limits/turn-limit.guard';
import { ProjectScope } from '../common/auth/project-scope.decorator';
import { map, type Observable } from 'rxjs';
import { responseFlow } from '../common/sse/client-flow';
import { SSE_MAX_PENDING_CHARS, toMessageEvents } from '../common/sse/message-events';
import type { SentEvent } from '../runs/run-event-bus.service';
import { ChatService } from './chat.service';
import { RunContinuationService } from './run-continuation.service';
import { ConversationsService } from './conversations.service';
import { ChatMessageDto, ConversationDto } from './dto/chat-response.dto';
import { RenameConversationDto } from './dto/rename-conversation.dto';
import { ConversationSettingsDto, ForkRunDto, ListConversationsQueryDto, ResumeRunDto, SendMessageDto } from './dto/send-message.dto';
import { TwoStageEnabledGuard } from './two-stage-enabled.guard';
import { UuidParamPipe } from '../common/errors/field-errors';

const SSE_DESCRIPTION =
  'Server-Sent Events: start, phase, chunk, tool_calls, tool_progress, tool_phase, sources, notice, error, then exactly one done (or paused). Every data carries requestId, projectId, conversationId, seq (= SSE id), phase, phaseIndex, cycleIndex.';

/** added (issue 33): a message's stream opens with `queued` while its conversation's previous turn is active */
const SEND_DESCRIPTION = `${SSE_DESCRIPTION} A message queued behind the conversation's active turn (options.multitask) opens with queued (seq 0, not stored).`;
const BUSY = `conversation_busy: the conversation's previous turn is still active and options.multitask is reject (the default); the body names its requestId; nothing is stored. ${IDEMPOTENCY_CONFLICT}`;

@ApiTags('chat')
@Controller('api/chat')
export class ChatController {
  constructor(
    private readonly chat: ChatService,
    private readonly continuations: RunContinuationService,
    private readonly conversations: ConversationsService,
  ) {}

  @StartsTurn()
  @ProjectScope('projectId', 'conversation:conversationId')
  @Sse('messages', { method: RequestMethod.POST, maxPendingDataLength: SSE_MAX_PENDING_CHARS })
  @HttpCode(200)
  @ApiOperation({ operationId: 'sendMessage', summary: 'Send a message (unified agentic route); streams the turn as SSE' })
  @ApiSseResponse({ description: SEND_DESCRIPTION, events: RUN_EVENTS, union: 'RunEvent' })
  @ApiBadRequestResponse({ description: 'invalid body (nothing is stored)' })
  @ApiNotFoundResponse({ description: 'unknown conversationId' })
  @ApiConflictResponse({ description: BUSY })
  @ApiServiceUnavailableResponse({ description: 'database_unavailable: the message could not be stored (nothing was)' })
  @ApiIdempotentSend()
  async send(
    @Body() dto: SendMessageDto,
    @IdempotencyKey() idempotency: IdempotentSend | undefined,
    @SenderKey() keyId: string,
    @Res({ passthrough: true }) res: Response,
    @ClientSignal() signal: AbortSignal,
  ): Promise<Observable<MessageEvent>> {
    return sse(await this.chat.send('unified', dto, responseFlow(res), signal, { idempotency, keyId }));
  }

  @StartsTurn()
  @ProjectScope('projectId', 'conversation:conversationId')
  @Sse('messages_two_stage', { method: RequestMethod.POST, maxPendingDataLength: SSE_MAX_PENDING_CHARS })
  @HttpCode(200)
  @UseGuards(TwoStageEnabledGuard)
  @ApiOperation({ operationId: 'sendMessageTwoStage', summary: 'Send a message (two-stage triggered phases); 404 two_stage_disabled unless TWO_STAGE_ENABLED=true' })
  @ApiSseResponse({ description: SEND_DESCRIPTION, events: RUN_EVENTS, union: 'RunEvent' })
  @ApiBadRequestResponse({ description: 'invalid body (nothing is stored)' })
  @ApiNotFoundResponse({ description: 'two_stage_disabled, or unknown conversationId' })
  @ApiConflictResponse({ description: BUSY })
  @ApiServiceUnavailableResponse({ description: 'database_unavailable: the message could not be stored (nothing was)' })
  @ApiIdempotentSend()
  async sendTwoStage(
    @Body() dto: SendMessageDto,
    @IdempotencyKey() idempotency: IdempotentSend | undefined,
    @SenderKey() keyId: string,
    @Res({ passthrough: true }) res: Response,
    @ClientSignal() signal: AbortSignal,
  ): Promise<Observable<MessageEvent>> {
    return sse(await this.chat.send('two-stage', dto, responseFlow(res), signal, { idempotency, keyId }));
  }

  @StartsTurn()
  @ProjectScope('run:requestId')
  @Sse('messages_two_stage/resume', { method: RequestMethod.POST, maxPendingDataLength: SSE_MAX_PENDING_CHARS })
  @HttpCode(200)
  @UseGuards(TwoStageEnabledGuard)
  @ApiOperation({
    operationId: 'resumeTwoStageRun',
    summary:
      'Resume a paused two-stage run in place from its latest checkpoint, on any instance (SSE; seq continues). A cancelled run is never resumed (409 run_cancelled); a finished run (409 run_finished) or an older checkpoint (409 run_not_resumable) is refused too, and the refusal names the fork route',
  })
  @ApiSseResponse({ description: SSE_DESCRIPTION, events: RUN_EVENTS, union: 'RunEvent' })
  @ApiNotFoundResponse({ description: 'unknown run, or no checkpoint at that phase' })
  @ApiConflictResponse({
    description:
      'run_cancelled: the run was cancelled; run_finished: it completed or failed; run_not_resumable: not the latest checkpoint, not two-stage, or its checkpoint cannot be read; resume_in_progress: it is running or another resume won. The body lists its checkpoints',
  })
  async resume(@Body() dto: ResumeRunDto, @Res({ passthrough: true }) res: Response, @ClientSignal() signal: AbortSignal): Promise<Observable<MessageEvent>> {
    return sse(await this.continuations.resume(dto, responseFlow(res), signal));
  }

  @StartsTurn()
  @ProjectScope('run:requestId')
  @Sse('runs/:requestId/fork', { method: RequestMethod.POST, maxPendingDataLength: SSE_MAX_PENDING_CHARS })
  @HttpCode(200)
  @UseGuards(TwoStageEnabledGuard)
  @ApiTags('runs')
  @ApiOperation({
    operationId: 'forkRun',
    summary:
      'Fork a two-stage run from any of its checkpoints (paused, completed, cancelled or failed run), on any instance (SSE): a new run (new requestId, start.parentRequestId) continues from it; the parent is left as it was',
  })
  @ApiSseResponse({ description: SSE_DESCRIPTION, events: RUN_EVENTS, union: 'RunEvent' })
  @ApiBadRequestResponse({ description: 'requestId not a UUID, or fromPhaseIndex not an integer >= 1 (nothing changes)' })
  @ApiNotFoundResponse({ description: 'run_not_found, or checkpoint_not_found (the body lists its checkpoints)' })
  @ApiConflictResponse({ description: 'run_in_progress: the run is running (pause or cancel it first); run_not_resumable: it is not two-stage, or its checkpoint cannot be read' })
  @ApiTooManyRequestsResponse({ description: "budget_exhausted: the project's or the key's budget cannot hold the fork's turn (as a send; nothing is stored)" })
  async fork(
    @Param('requestId', new UuidParamPipe()) requestId: string,
    @Body() dto: ForkRunDto,
    @Res({ passthrough: true }) res: Response,
    @ClientSignal() signal: AbortSignal,
    @SenderKey() keyId: string,
  ): Promise<Observable<MessageEvent>> {
    return sse(await this.continuations.fork(requestId, dto.fromPhaseIndex, responseFlow(res), signal, keyId));
  }

  @Get('conversations')
  @ProjectScope('projectId')
  @ApiOperation({ operationId: 'listConversations', summary: 'Conversations of a project, newest first' })
  @ApiOkResponse({ type: [ConversationDto] })
  list(@Query() q: ListConversationsQueryDto): Promise<ConversationDto[]> {
    return this.conversations.list(q.projectId ?? 'default');
  }

  @Get('conversations/:id/messages')
  @ProjectScope('conversation:id')
  @ApiOperation({ operationId: 'listConversationMessages', summary: 'Messages of a conversation, oldest first' })
  @ApiOkResponse({ type: [ChatMessageDto] })
  @ApiNotFoundResponse({ description: 'unknown conversation' })
  messages(@Param('id', new UuidParamPipe()) id: string): Promise<ChatMessageDto[]> {
    return this.conversations.messages(id);
  }

  @Patch('conversations/:id')
  @ProjectScope('conversation:id')
  @ApiOperation({ operationId: 'renameConversation', summary: 'Rename a conversation (the list order stays by last turn)' })
  @ApiOkResponse({ type: ConversationDto })
  @ApiBadRequestResponse({ description: 'id not a UUID, or title missing, blank or over 120 characters (nothing changes)' })
  @ApiNotFoundResponse({ description: 'unknown conversation' })
  rename(@Param('id', new UuidParamPipe()) id: string, @Body() dto: RenameConversationDto): Promise<ConversationDto> {
    return this.conversations.rename(id, dto.title);
  }

  @Delete('conversations/:id')
  @ProjectScope('conversation:id')
  @HttpCode(204)
  @ApiOperation({
    operationId: 'deleteConversation',
    summary: 'Delete a conversation with its messages, runs, stored run events and trace events, in one transaction',
  })
  @ApiNoContentResponse({ description: 'deleted' })
  @ApiBadRequestResponse({ description: 'id not a UUID (nothing is deleted)' })
  @ApiNotFoundResponse({ description: 'unknown conversation' })
  @ApiConflictResponse({ description: 'run_in_progress: a run of the conversation is still running (cancel it first); nothing is deleted' })
  async remove(@Param('id', new UuidParamPipe()) id: string): Promise<void> {
    await this.conversations.remove(id);
  }

  @Patch('conversations/:id/settings')
  @ProjectScope('conversation:id')
  @ApiOperation({ operationId: 'updateConversationSettings', summary: 'Per-conversation settings (orchestratorEnabled overrides ORCHESTRATOR_ENABLED)' })
  @ApiOkResponse({ type: ConversationDto })
  @ApiNotFoundResponse({ description: 'unknown conversation' })
  settings(@Param('id', new UuidParamPipe()) id: string, @Body() dto: ConversationSettingsDto): Promise<ConversationDto> {
    return this.conversations.updateSettings(id, dto);
  }
}

/** A run's events as SSE messages: id = seq, event = type, data = the enveloped JSON. */
function sse(events: Observable<SentEvent>): Observable<MessageEvent> {
  return toMessageEvents(events.pipe(map((e) => ({ id: e.seq, type: e.type, data: e.data, json: e.json }))));
}
