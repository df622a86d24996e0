import { Body, Controller, Get, Headers, HttpCode, type MessageEvent, Param, Post, Query, Req, RequestMethod, Res, Sse, UseFilters } from '@nestjs/common';
import { SenderKey } from '../../common/auth/sender-key.decorator';
import { ApiBody, ApiHeader, ApiOkResponse, ApiOperation, ApiParam, ApiQuery, ApiTags } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { EMPTY, type Observable } from 'rxjs';
import { canUseProject, principalOf } from '../../common/auth/principal';
import { AnyProject, ProjectScope } from '../../common/auth/project-scope.decorator';
import { ApiIdempotentSend } from '../../common/idempotency/api-idempotent-send.decorator';
import { IdempotencyKey, type IdempotentSend } from '../../common/idempotency/idempotency-key';
import { StartsTurn } from '../../common/limits/turn-limit.guard';
import { responseFlow } from '../../common/sse/client-flow';
import { ClientSignal } from '../../common/sse/client-signal.decorator';
import { SSE_MAX_PENDING_CHARS } from '../../common/sse/message-events';
import { ApiOpenAiErrors } from '../api-openai-errors.decorator';
import { ORION_HEADERS } from '../openai-completions.service';
import { invalidRequest } from '../openai-error';
import { OpenAiErrorFilter } from '../openai-error.filter';
import { OpenAiResponsesService, TOOL_RESULTS_HEADER } from './openai-responses.service';

const RESPONSE_DESCRIPTION =
  'stream false: one response object (JSON); stream true: Server-Sent Events named by their type (response.created, response.in_progress, response.output_item.added, response.mcp_call.*, response.content_part.added, response.output_text.delta, …, response.completed), each with sequence_number';

/**
 * OpenAI's Responses API (`/v1/responses`) over Orion's turns: create, retrieve (and resume its
 * stream with `starting_after`), cancel. Errors in OpenAI's shape. Registered before the /v1
 * catch-all of OpenAiController, which answers every other /v1 path with a 404.
 */
@ApiTags('openai-compatible')
@Controller('v1')
@UseFilters(OpenAiErrorFilter)
export class ResponsesController {
  constructor(private readonly responses: OpenAiResponsesService) {}

  @StartsTurn()
  @ProjectScope(`header:${ORION_HEADERS.project}`)
  @Sse('responses', { method: RequestMethod.POST, maxPendingDataLength: SSE_MAX_PENDING_CHARS })
  @HttpCode(200)
  @ApiOperation({
    operationId: 'openAiCreateResponse',
    summary:
      'OpenAI Responses API: Orion runs the turn with its own tools (models orion-unified, orion-two-stage or an allowed model); the tool calls it ran are mcp_call output items; previous_response_id or conversation continue a conversation; background true answers at once',
  })
  @ApiBody({ schema: { type: 'object', required: ['model', 'input'], description: "OpenAI's Responses parameters; docs/API.md lists what is taken and what is refused" } })
  @ApiHeader({ name: 'X-Orion-Project', required: false, description: 'the project (default: default)' })
  @ApiHeader({ name: 'X-Orion-Tool-Results', required: false, description: 'true: mcp_call items carry the raw tool output (the chat routes\' debugShowToolResults)' })
  @ApiOkResponse({ description: RESPONSE_DESCRIPTION })
  @ApiIdempotentSend({ errors: false })
  @ApiOpenAiErrors(400, 401, 404, 409, 413, 415, 422, 429, 500, 503)
  async create(
    @Body() body: Record<string, unknown>,
    @Headers() headers: Record<string, string | string[] | undefined>,
    @IdempotencyKey([ORION_HEADERS.project, TOOL_RESULTS_HEADER]) idempotency: IdempotentSend | undefined,
    @SenderKey() keyId: string,
    @Res({ passthrough: true }) res: Response,
    @ClientSignal() signal: AbortSignal,
  ): Promise<Observable<MessageEvent>> {
    if (this.responses.wantsStream(body)) return this.responses.stream(body, headers, responseFlow(res), signal, idempotency, keyId);
    // a JSON answer, sent here: the stream Nest then pipes into the ended response sends nothing
    const response = await this.responses.create(body, headers, signal, idempotency, keyId);
    if (!res.writableEnded && !res.destroyed) res.status(200).json(response);
    return EMPTY;
  }

  @AnyProject()
  @Sse('responses/:responseId', { method: RequestMethod.GET, maxPendingDataLength: SSE_MAX_PENDING_CHARS })
  @ApiOperation({
    operationId: 'openAiRetrieveResponse',
    summary: 'OpenAI Responses API: a response as its run stands now, on any instance; stream=true replays its events after starting_after, then follows it live',
  })
  @ApiParam({ name: 'responseId', example: 'resp_0f8fad5b-d9cb-469f-a165-70867728950e' })
  @ApiQuery({ name: 'stream', required: false, enum: ['true', 'false'] })
  @ApiQuery({ name: 'starting_after', required: false, description: 'with stream=true: the sequence_number after which to resume' })
  @ApiOkResponse({ description: RESPONSE_DESCRIPTION })
  @ApiOpenAiErrors(400, 401, 404, 429)
  async retrieve(
    @Param('responseId') id: string,
    @Query('stream') stream: string | undefined,
    @Query('starting_after') startingAfter: string | undefined,
    @Req() req: Request,
    @Res({ passthrough: true }) res: Response,
    @ClientSignal() signal: AbortSignal,
  ): Promise<Observable<MessageEvent>> {
    const principal = principalOf(req);
    const canUse = (p: string) => canUseProject(principal, p);
    if (stream !== undefined && stream !== 'true' && stream !== 'false') throw invalidRequest('stream must be true or false', 'stream', 'invalid_value');
    if (startingAfter !== undefined && !/^\d{1,9}$/.test(startingAfter)) throw invalidRequest('starting_after must be a non-negative integer', 'starting_after', 'invalid_value');
    if (stream === 'true') return this.responses.resume(id, startingAfter === undefined ? -1 : Number(startingAfter), canUse, signal, responseFlow(res));
    if (startingAfter !== undefined) throw invalidRequest('starting_after needs stream=true', 'starting_after', 'invalid_value');
    const response = await this.responses.retrieve(id, canUse);
    if (!res.writableEnded && !res.destroyed) res.status(200).json(response);
    return EMPTY;
  }

  @AnyProject()
  @Post('responses/:responseId/cancel')
  @HttpCode(200)
  @ApiOperation({ operationId: 'openAiCancelResponse', summary: "OpenAI Responses API: Orion's cancel of the response's run; the response once the run has ended (status cancelled)" })
  @ApiParam({ name: 'responseId', example: 'resp_0f8fad5b-d9cb-469f-a165-70867728950e' })
  @ApiOkResponse({ description: 'the response object' })
  @ApiOpenAiErrors(400, 401, 404, 413, 415, 429)
  cancel(@Param('responseId') id: string, @Req() req: Request): Promise<Record<string, unknown>> {
    const principal = principalOf(req);
    return this.responses.cancel(id, (p) => canUseProject(principal, p));
  }
}
