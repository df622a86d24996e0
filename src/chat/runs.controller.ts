import { BadRequestException, Controller, Get, Headers, HttpCode, Param, ParseUUIDPipe, Post, Query, Res } from '@nestjs/common';
import type { Response } from 'express';
import { SseWriter } from '../common/sse/sse-writer';
import { RunEventsQueryDto } from './dto/send-message.dto';
import { RunEventsService } from './run-events.service';
import { ApiAcceptedResponse, ApiBadRequestResponse, ApiConflictResponse, ApiHeader, ApiNotFoundResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { ApiSseResponse } from '../common/sse/api-sse-response.decorator';
import { RUN_EVENTS } from './dto/run-event.dto';
import { RunDto } from './dto/chat-response.dto';
import { RunsService } from './runs.service';

@ApiTags('runs')
@Controller('api/chat/runs')
export class RunsController {
  constructor(
    private readonly runs: RunsService,
    private readonly runEvents: RunEventsService,
  ) {}

  @Get(':requestId')
  @ApiOperation({ operationId: 'getRun', summary: 'Status, protocol, counters and checkpoints of a run' })
  @ApiOkResponse({ type: RunDto })
  @ApiNotFoundResponse({ description: 'unknown run' })
  get(@Param('requestId', new ParseUUIDPipe()) requestId: string): Promise<RunDto> {
    return this.runs.get(requestId);
  }

  @Get(':requestId/events')
  @ApiOperation({ operationId: 'streamRunEvents', summary: 'Reconnect: every stored event after Last-Event-ID (or ?lastEventId=), then the live run until it ends (EventSource-compatible)' })
  @ApiHeader({ name: 'Last-Event-ID', required: false, description: 'the last seq the client received' })
  @ApiSseResponse({ description: 'the run\'s events, exactly as they were first sent (same ids), then its live events', events: RUN_EVENTS })
  @ApiBadRequestResponse({ description: 'Last-Event-ID is not a non-negative integer' })
  @ApiNotFoundResponse({ description: 'unknown run' })
  async events(
    @Param('requestId', new ParseUUIDPipe()) requestId: string,
    @Query() q: RunEventsQueryDto,
    @Headers('last-event-id') lastEventIdHeader: string | undefined,
    @Res() res: Response,
  ): Promise<void> {
    const raw = lastEventIdHeader ?? q.lastEventId ?? '0';
    if (!/^\d{1,9}$/.test(raw.trim())) throw new BadRequestException('Last-Event-ID must be a non-negative integer');
    await this.runEvents.requireRun(requestId);
    await this.runEvents.follow(requestId, Number(raw.trim()), new SseWriter(res));
  }

  @Post(':requestId/cancel')
  @HttpCode(202)
  @ApiOperation({ operationId: 'cancelRun', summary: 'Cancel a run: its stream ends with done{stopReason:"cancelled"}, the model request is aborted' })
  @ApiAcceptedResponse({ type: RunDto })
  @ApiNotFoundResponse({ description: 'unknown run' })
  @ApiConflictResponse({ description: 'the run already ended' })
  cancel(@Param('requestId', new ParseUUIDPipe()) requestId: string): Promise<RunDto> {
    return this.runs.cancel(requestId);
  }

  @Post(':requestId/pause')
  @HttpCode(202)
  @ApiOperation({ operationId: 'pauseRun', summary: 'Pause a run at its next natural pause point (right after a tool result is traced); its stream ends with paused' })
  @ApiAcceptedResponse({ type: RunDto })
  @ApiNotFoundResponse({ description: 'unknown run' })
  @ApiConflictResponse({ description: 'the run is not running' })
  pause(@Param('requestId', new ParseUUIDPipe()) requestId: string): Promise<RunDto> {
    return this.runs.pause(requestId);
  }
}
