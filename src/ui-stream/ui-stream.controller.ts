import { Body, Controller, HttpCode, type MessageEvent, Param, Query, RequestMethod, Res, Sse } from '@nestjs/common';
import { SenderKey } from '../common/auth/sender-key.decorator';
import { ApiBadRequestResponse, ApiConflictResponse, ApiNoContentResponse, ApiNotFoundResponse, ApiOkResponse, ApiOperation, ApiParam, ApiServiceUnavailableResponse, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { EMPTY, type Observable } from 'rxjs';
import { ProjectScope } from '../common/auth/project-scope.decorator';
import { StartsTurn } from '../common/limits/turn-limit.guard';
import { responseFlow } from '../common/sse/client-flow';
import { ClientSignal } from '../common/sse/client-signal.decorator';
import { SSE_MAX_PENDING_CHARS, toMessageEvents } from '../common/sse/message-events';
import { UiChatRequestDto, UiStreamQueryDto } from './dto/ui-chat-request.dto';
import { uiStreamExample } from './ui-stream.openapi';
import { IdempotencyKey, type IdempotentSend } from '../common/idempotency/idempotency-key';
import { ApiIdempotentSend, IDEMPOTENCY_CONFLICT } from '../common/idempotency/api-idempotent-send.decorator';
import { UI_MESSAGE_STREAM_HEADER, UI_MESSAGE_STREAM_VERSION, UiStreamService } from './ui-stream.service';

const UI_STREAM_DESCRIPTION =
  'The AI SDK UI message stream (header x-vercel-ai-ui-message-stream: v1): one `data:` line of JSON per part (start, start-step, text-start/text-delta/text-end, tool-input-available, tool-output-available only with options.debugShowToolResults, tool-output-error, tool-approval-request, tool-output-denied, source-url, source-document, data-phase, data-tool-progress, data-tool-phase, data-sources, data-notice, data-error, data-approval, data-paused, finish-step, finish, error), then `data: [DONE]`. docs/API.md lists how each run event maps.';

/** One SSE message of the UI message stream (its data is a part, or the final `[DONE]`), with a whole turn as the example. */
const UI_STREAM_RESPONSE = {
  description: UI_STREAM_DESCRIPTION,
  headers: { [UI_MESSAGE_STREAM_HEADER]: { description: 'the protocol version the AI SDK transports check', schema: { type: 'string', enum: [UI_MESSAGE_STREAM_VERSION] } } },
  content: {
    'text/event-stream': {
      schema: {
        type: 'object',
        required: ['data'],
        properties: { data: { oneOf: [{ type: 'object', required: ['type'], properties: { type: { type: 'string' } }, additionalProperties: true }, { type: 'string', enum: ['[DONE]'] }] } },
      },
      example: uiStreamExample(),
    },
  },
};

@ApiTags('chat')
@Controller('api/chat/ui')
export class UiStreamController {
  constructor(private readonly ui: UiStreamService) {}

  @StartsTurn()
  @ProjectScope('projectId')
  @Sse('', { method: RequestMethod.POST, maxPendingDataLength: SSE_MAX_PENDING_CHARS })
  @HttpCode(200)
  @ApiOperation({
    operationId: 'sendUiMessage',
    summary: "AI SDK chat route (DefaultChatTransport's request): runs a unified turn for the last user message in the chat's conversation and streams it as the AI SDK UI message stream",
  })
  @ApiOkResponse(UI_STREAM_RESPONSE)
  @ApiBadRequestResponse({ description: 'invalid body, or the last message is not a user message with text only (nothing is stored)' })
  @ApiNotFoundResponse({ description: 'the chat id is a UUID naming a conversation of another project' })
  @ApiServiceUnavailableResponse({ description: 'database_unavailable: the message could not be stored (nothing was)' })
  @ApiConflictResponse({ description: `conversation_busy: the chat's previous turn is still active (options.multitask reject); ${IDEMPOTENCY_CONFLICT}` })
  @ApiIdempotentSend()
  async send(
    @Body() dto: UiChatRequestDto,
    @IdempotencyKey() idempotency: IdempotentSend | undefined,
    @SenderKey() keyId: string,
    @Res({ passthrough: true }) res: Response,
    @ClientSignal() signal: AbortSignal,
  ): Promise<Observable<MessageEvent>> {
    const parts = await this.ui.send(dto, responseFlow(res), signal, idempotency, keyId);
    res.setHeader(UI_MESSAGE_STREAM_HEADER, UI_MESSAGE_STREAM_VERSION);
    return toMessageEvents(parts);
  }

  @ProjectScope('projectId')
  @Sse(':chatId/stream', { maxPendingDataLength: SSE_MAX_PENDING_CHARS })
  @ApiOperation({
    operationId: 'resumeUiStream',
    summary: "The AI SDK transport's resume request: the chat's active run as the UI message stream, from its start, then live until it ends; 204 when the chat has no active run",
  })
  @ApiParam({ name: 'chatId', description: 'the chat id of POST /api/chat/ui' })
  @ApiOkResponse(UI_STREAM_RESPONSE)
  @ApiNoContentResponse({ description: 'no active run for this chat in this project (the AI SDK does not resume)' })
  @ApiBadRequestResponse({ description: 'invalid projectId' })
  async stream(
    @Param('chatId') chatId: string,
    @Query() q: UiStreamQueryDto,
    @Res({ passthrough: true }) res: Response,
    @ClientSignal() signal: AbortSignal,
  ): Promise<Observable<MessageEvent>> {
    const parts = await this.ui.resume(q.projectId ?? 'default', chatId, responseFlow(res), signal);
    if (!parts) {
      res.status(204);
      return EMPTY;
    }
    res.setHeader(UI_MESSAGE_STREAM_HEADER, UI_MESSAGE_STREAM_VERSION);
    return toMessageEvents(parts);
  }
}
