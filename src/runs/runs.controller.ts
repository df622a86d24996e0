import { BadRequestException, Body, Controller, Get, Headers, HttpCode, type MessageEvent, Param, Post, Query, Req, Res, Sse } from '@nestjs/common';
import type { Request, Response } from 'express';
import { ProjectScope } from '../common/auth/project-scope.decorator';
import { EMPTY, map, type Observable } from 'rxjs';
import { responseFlow } from '../common/sse/client-flow';
import { SSE_MAX_PENDING_CHARS, toMessageEvents } from '../common/sse/message-events';
import { RunEventsQueryDto } from './dto/run.dto';
import { RunEventsService } from './run-events.service';
import { ApiAcceptedResponse, ApiBadRequestResponse, ApiConflictResponse, ApiHeader, ApiNoContentResponse, ApiNotFoundResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { ApiSseResponse } from '../common/sse/api-sse-response.decorator';
import { ClientSignal } from '../common/sse/client-signal.decorator';
import { RUN_EVENTS } from './dto/run-event.dto';
import { RunDto } from './dto/run.dto';
import { RunsService } from './runs.service';
import { QueryTokenAllowed } from '../common/auth/public.decorator';
import { LOCAL_PRINCIPAL, principalOf } from '../common/auth/principal';
import { ApprovalDto, DecideApprovalDto } from './approvals/approval.dto';
import { ApprovalsService } from './approvals/approvals.service';
import { UuidParamPipe } from '../common/errors/field-errors';

@ApiTags('runs')
@Controller('api/chat/runs')
export class RunsController {
  constructor(
    private readonly runs: RunsService,
    private readonly runEvents: RunEventsService,
    private readonly approvals: ApprovalsService,
  ) {}

  @Get(':requestId')
  @ProjectScope('run:requestId')
  @ApiOperation({ operationId: 'getRun', summary: 'Status, protocol, counters and checkpoints of a run' })
  @ApiOkResponse({ type: RunDto })
  @ApiNotFoundResponse({ description: 'unknown run' })
  get(@Param('requestId', new UuidParamPipe()) requestId: string): Promise<RunDto> {
    return this.runs.get(requestId);
  }

  @Sse(':requestId/events', { maxPendingDataLength: SSE_MAX_PENDING_CHARS })
  @QueryTokenAllowed()
  @ProjectScope('run:requestId')
  @ApiOperation({ operationId: 'streamRunEvents', summary: 'Reconnect: every stored event after Last-Event-ID (or ?lastEventId=), then the live run until it ends (EventSource-compatible)' })
  @ApiHeader({ name: 'Last-Event-ID', required: false, description: 'the last seq the client received' })
  @ApiSseResponse({ description: 'the run\'s events, exactly as they were first sent (same ids), then its live events', events: RUN_EVENTS, union: 'RunEvent' })
  @ApiNoContentResponse({ description: 'the run has ended and has nothing after Last-Event-ID (an EventSource stops reconnecting)' })
  @ApiBadRequestResponse({ description: 'Last-Event-ID is not a non-negative integer' })
  @ApiNotFoundResponse({ description: 'unknown run' })
  async events(
    @Param('requestId', new UuidParamPipe()) requestId: string,
    @Query() q: RunEventsQueryDto,
    @Headers('last-event-id') lastEventIdHeader: string | undefined,
    @Res({ passthrough: true }) res: Response,
    @ClientSignal() signal: AbortSignal,
  ): Promise<Observable<MessageEvent>> {
    const raw = lastEventIdHeader ?? q.lastEventId ?? '0';
    if (!/^\d{1,9}$/.test(raw.trim())) throw new BadRequestException('Last-Event-ID must be a non-negative integer');
    const afterSeq = Number(raw.trim());
    if (!(await this.runEvents.hasMore(requestId, afterSeq))) {
      res.status(204);
      return EMPTY;
    }
    const events = this.runEvents.follow(requestId, afterSeq, responseFlow(res), signal);
    return toMessageEvents(events.pipe(map((e) => ({ id: e.seq, type: e.type, data: e.data }))));
  }

  @Post(':requestId/cancel')
  @ProjectScope('run:requestId')
  @HttpCode(202)
  @ApiOperation({ operationId: 'cancelRun', summary: 'Cancel a run: its stream ends with done{stopReason:"cancelled"}, the model request is aborted' })
  @ApiAcceptedResponse({ type: RunDto })
  @ApiNotFoundResponse({ description: 'unknown run' })
  @ApiConflictResponse({ description: 'the run already ended' })
  cancel(@Param('requestId', new UuidParamPipe()) requestId: string): Promise<RunDto> {
    return this.runs.cancel(requestId);
  }

  @Post(':requestId/pause')
  @ProjectScope('run:requestId')
  @HttpCode(202)
  @ApiOperation({ operationId: 'pauseRun', summary: 'Pause a run at its next natural pause point (right after a tool result is traced); its stream ends with paused' })
  @ApiAcceptedResponse({ type: RunDto })
  @ApiNotFoundResponse({ description: 'unknown run' })
  @ApiConflictResponse({ description: 'the run is not running' })
  pause(@Param('requestId', new UuidParamPipe()) requestId: string): Promise<RunDto> {
    return this.runs.pause(requestId);
  }

  @Get(':requestId/approvals')
  @ProjectScope('run:requestId')
  @ApiOperation({ operationId: 'listRunApprovals', summary: 'The run\'s approvals, oldest first: what was asked (arguments as shown), status, decision, who decided, when' })
  @ApiOkResponse({ type: [ApprovalDto] })
  @ApiNotFoundResponse({ description: 'unknown run' })
  listApprovals(@Param('requestId', new UuidParamPipe()) requestId: string): Promise<ApprovalDto[]> {
    return this.approvals.list(requestId);
  }

  @Post(':requestId/approvals/:approvalId')
  @ProjectScope('run:requestId')
  @HttpCode(200)
  @ApiOperation({
    operationId: 'decideApproval',
    summary: 'Approve (optionally with edited arguments) or deny a tool call the run waits for, from any instance; the run goes on with approval_decided',
  })
  @ApiOkResponse({ type: ApprovalDto, description: 'the approval as stored after the decision' })
  @ApiBadRequestResponse({ description: 'invalid body; invalid_approval: arguments with deny, or edited arguments the tool refuses (the body lists errors); nothing changed' })
  @ApiNotFoundResponse({ description: 'run_not_found (or another project\'s run); approval_not_found: the run asked for no such approval' })
  @ApiConflictResponse({ description: 'approval_not_pending: already approved, denied, expired or void (the body says which, and by whom); run_not_awaiting' })
  decideApproval(
    @Param('requestId', new UuidParamPipe()) requestId: string,
    @Param('approvalId', new UuidParamPipe()) approvalId: string,
    @Body() body: DecideApprovalDto,
    @Req() req: Request,
  ): Promise<ApprovalDto> {
    const principal = principalOf(req);
    // without keys nobody is named: the local user
    return this.approvals.decide(requestId, approvalId, body, principal === LOCAL_PRINCIPAL ? null : principal.keyId);
  }
}
