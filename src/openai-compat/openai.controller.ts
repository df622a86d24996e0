import { All, Body, Controller, Get, Headers, HttpCode, type MessageEvent, Param, Req, RequestMethod, Res, Sse, UseFilters } from '@nestjs/common';
import { SenderKey } from '../common/auth/sender-key.decorator';
import { ApiBody, ApiExcludeEndpoint, ApiExtraModels, ApiHeader, ApiOkResponse, ApiOperation, ApiTags, getSchemaPath } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { EMPTY, type Observable } from 'rxjs';
import { AnyProject, ProjectScope } from '../common/auth/project-scope.decorator';
import { StartsTurn } from '../common/limits/turn-limit.guard';
import { responseFlow, UNBOUNDED_FLOW } from '../common/sse/client-flow';
import { ClientSignal } from '../common/sse/client-signal.decorator';
import { SSE_MAX_PENDING_CHARS } from '../common/sse/message-events';
import { ChatCompletionRequestDto } from './dto/chat-completion-request.dto';
import { ApiOpenAiErrors } from './api-openai-errors.decorator';
import { ChatCompletionChunkDto, ChatCompletionDto, OpenAiModelDto, OpenAiModelListDto } from './dto/chat-completion-response.dto';
import { type ModelList, OpenAiCompletionsService, ORION_HEADERS } from './openai-completions.service';
import { DONE, type RunEventLike, toCompletionChunks } from './openai-chunks.mapper';
import { OpenAiError } from './openai-error';
import { OpenAiErrorFilter } from './openai-error.filter';
import { IdempotencyKey, type IdempotentSend } from '../common/idempotency/idempotency-key';
import { ApiIdempotentSend } from '../common/idempotency/api-idempotent-send.decorator';

/** The documented stream: a short turn that ran list_files, through the mapper the route uses. */
const STREAM_EXAMPLE = (() => {
  const env = { requestId: '0f8fad5b-d9cb-469f-a165-70867728950e', conversationId: '1b4e28ba-2fa1-11d2-883f-0016d3cca427' };
  const turn: RunEventLike[] = [
    { type: 'start', data: { ...env, model: 'qwen3:8b' } },
    { type: 'tool_progress', data: { ...env, tool: 'list_files', action: 'calling', params: { path: '.' } } },
    { type: 'chunk', data: { ...env, content: 'The project holds ' } },
    { type: 'chunk', data: { ...env, content: 'README.md.' } },
    { type: 'done', data: { ...env, stopReason: 'final_answer', usage: { promptTokens: 812, completionTokens: 9, totalTokens: 821 } } },
  ];
  const frame = { created: 1767225600, model: 'qwen3:8b', includeUsage: true, progress: false };
  return turn.flatMap((e) => toCompletionChunks(e, frame)).map((d) => `data: ${d === DONE ? d : JSON.stringify(d)}\n\n`).join('');
})();

/**
 * The OpenAI-compatible edge: `GET /v1/models` and `POST /v1/chat/completions`, so OpenAI
 * clients (the `openai` packages, the AI SDK's openai-compatible provider, gateways) run Orion's
 * turns unchanged. Every error here is in OpenAI's shape (OpenAiErrorFilter).
 */
@ApiTags('openai-compatible')
@Controller('v1')
@UseFilters(OpenAiErrorFilter)
@ApiExtraModels(ChatCompletionDto, ChatCompletionChunkDto)
export class OpenAiController {
  constructor(private readonly completions: OpenAiCompletionsService) {}

  @Get('models')
  @AnyProject()
  @ApiOperation({ operationId: 'openAiListModels', summary: 'OpenAI-compatible: the allowed models (LLM_MODELS), then the aliases orion-unified and orion-two-stage (when TWO_STAGE_ENABLED)' })
  @ApiOkResponse({ type: OpenAiModelListDto })
  @ApiOpenAiErrors(401, 429)
  listModels(): ModelList {
    return this.completions.models();
  }

  @Get('models/:model')
  @AnyProject()
  @ApiOperation({ operationId: 'openAiRetrieveModel', summary: 'OpenAI-compatible: one model of GET /v1/models' })
  @ApiOkResponse({ type: OpenAiModelDto })
  @ApiOpenAiErrors(400, 401, 404, 429)
  retrieveModel(@Param('model') model: string): OpenAiModelDto {
    return this.completions.model(model);
  }

  @StartsTurn()
  @ProjectScope(`header:${ORION_HEADERS.project}`, `conversation:header:${ORION_HEADERS.conversation}`)
  @Sse('chat/completions', { method: RequestMethod.POST, maxPendingDataLength: SSE_MAX_PENDING_CHARS })
  @HttpCode(200)
  @ApiOperation({
    operationId: 'openAiCreateChatCompletion',
    summary:
      'OpenAI-compatible chat completion: Orion runs the turn with its own tools (the messages are the history, or X-Orion-Conversation names a stored conversation); stream true: chat.completion.chunk messages, then [DONE]',
  })
  @ApiBody({ type: ChatCompletionRequestDto })
  @ApiHeader({ name: 'X-Orion-Project', required: false, description: 'the project (default: default)' })
  @ApiHeader({ name: 'X-Orion-Conversation', required: false, description: 'a stored conversation: its history is used and the last user message is the new one' })
  @ApiHeader({ name: 'X-Orion-Progress', required: false, description: 'true: tool steps as readable text in delta.orion_progress (message.orion_progress without stream)' })
  @ApiOkResponse({
    description: 'stream false: one chat.completion (JSON); stream true: Server-Sent Events, one chat.completion.chunk per data line, then data: [DONE]',
    content: {
      'application/json': { schema: { $ref: getSchemaPath(ChatCompletionDto) } },
      'text/event-stream': { schema: { $ref: getSchemaPath(ChatCompletionChunkDto) }, example: STREAM_EXAMPLE },
    },
  })
  @ApiIdempotentSend({ errors: false })
  @ApiOpenAiErrors(400, 401, 404, 409, 413, 415, 422, 429, 500, 502, 503)
  async createChatCompletion(
    @Body() body: Record<string, unknown>,
    @Headers() headers: Record<string, string | string[] | undefined>,
    @IdempotencyKey([ORION_HEADERS.conversation]) idempotency: IdempotentSend | undefined,
    @SenderKey() keyId: string,
    @Res({ passthrough: true }) res: Response,
    @ClientSignal() signal: AbortSignal,
  ): Promise<Observable<MessageEvent>> {
    if (this.completions.wantsStream(body)) return this.completions.stream(body, headers, responseFlow(res), signal, idempotency, keyId);
    // A JSON answer, sent here: the stream Nest then pipes into the ended response sends nothing.
    // The signal is Nest's stream signal, which it already watches while this handler runs, so a
    // caller that hangs up before the answer cancels the turn as on a stream.
    const completion = await this.completions.complete(body, headers, UNBOUNDED_FLOW, signal, idempotency, keyId);
    if (!res.writableEnded && !res.destroyed) res.status(200).json(completion);
    return EMPTY;
  }

  /** Any other /v1 path: a 404 in OpenAI's shape, not Orion's. */
  @All('*path')
  @AnyProject()
  @ApiExcludeEndpoint()
  unknownRoute(@Req() req: Request): never {
    throw new OpenAiError(404, `Unknown request URL: ${req.method} ${req.path}`, null, 'unknown_url');
  }
}
