import { Controller, Get, HttpCode, Param, ParseUUIDPipe, Post } from '@nestjs/common';
import { ApiAcceptedResponse, ApiConflictResponse, ApiNotFoundResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { RunDto } from './dto/chat-response.dto';
import { RunsService } from './runs.service';

@ApiTags('runs')
@Controller('api/chat/runs')
export class RunsController {
  constructor(private readonly runs: RunsService) {}

  @Get(':requestId')
  @ApiOperation({ summary: 'Status, protocol, counters and checkpoints of a run' })
  @ApiOkResponse({ type: RunDto })
  @ApiNotFoundResponse({ description: 'unknown run' })
  get(@Param('requestId', new ParseUUIDPipe()) requestId: string): Promise<RunDto> {
    return this.runs.get(requestId);
  }

  @Post(':requestId/cancel')
  @HttpCode(202)
  @ApiOperation({ summary: 'Cancel a run: its stream ends with done{stopReason:"cancelled"}, the model request is aborted' })
  @ApiAcceptedResponse({ type: RunDto })
  @ApiNotFoundResponse({ description: 'unknown run' })
  @ApiConflictResponse({ description: 'the run already ended' })
  cancel(@Param('requestId', new ParseUUIDPipe()) requestId: string): Promise<RunDto> {
    return this.runs.cancel(requestId);
  }

  @Post(':requestId/pause')
  @HttpCode(202)
  @ApiOperation({ summary: 'Pause a run at its next natural pause point (right after a tool result is traced); its stream ends with paused' })
  @ApiAcceptedResponse({ type: RunDto })
  @ApiNotFoundResponse({ description: 'unknown run' })
  @ApiConflictResponse({ description: 'the run is not running' })
  pause(@Param('requestId', new ParseUUIDPipe()) requestId: string): Promise<RunDto> {
    return this.runs.pause(requestId);
  }
}
