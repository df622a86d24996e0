import { Body, Controller, Get, HttpCode, Inject, type MessageEvent, Post, Query, RequestMethod, Sse } from '@nestjs/common';
import { TOOL_RUNNER, type ToolRunner } from '../tools/tool-runner.port';
import { ApiBadRequestResponse, ApiConflictResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { ApiSseResponse } from '../common/sse/api-sse-response.decorator';
import { ClientSignal } from '../common/sse/client-signal.decorator';
import { ExecuteProgressEventDto } from './modes/dto/execute-stream-event.dto';
import { randomUUID } from 'node:crypto';
import { ProjectScope, AnyProject } from '../common/auth/project-scope.decorator';
import type { Observable } from 'rxjs';
import { fromGenerator } from '../common/sse/from-generator';
import { toMessageEvents, type WireMessage } from '../common/sse/message-events';
import { ExecuteToolsDto, ToolCallsResultDto, ToolIndexHitDto, ToolIndexSearchQueryDto } from './modes/dto/execute-tools.dto';
import type { ToolCallsResult } from './modes/tool-calls-result';
import { ToolIndexService } from './modes/tool-index/tool-index.service';
import { OrchestrationService, type ExecuteModeRequest } from './orchestration.service';
import { StartsTurn } from '../common/limits/turn-limit.guard';
import { IdempotencyKey, type IdempotentSend } from '../common/idempotency/idempotency-key';
import { ApiIdempotentSend } from '../common/idempotency/api-idempotent-send.decorator';
import { KeyedExecutions } from './modes/keyed-executions';

@ApiTags('orchestration')
@Controller('api/orchestration')
export class OrchestrationController {
  constructor(
    private readonly orchestration: OrchestrationService,
    private readonly index: ToolIndexService,
    @Inject(TOOL_RUNNER) private readonly tools: ToolRunner,
    private readonly keyed: KeyedExecutions,
  ) {}

  @Post('execute')
  @StartsTurn()
  @ProjectScope('projectId')
  @HttpCode(200)
  @ApiOperation({ operationId: 'executeTools', summary: 'Tool-only orchestration: one model decision (Classic: all tools; NarrowTopK: top-K retrieved), executed, as a ToolCallsResult' })
  @ApiOkResponse({ type: ToolCallsResultDto })
  @ApiBadRequestResponse({ description: 'invalid body, missing or unknown mode' })
  @ApiConflictResponse({ description: "idempotency_key_in_use: the key's first send is still executing (a send with the key waits up to 30 s for its result); send again shortly" })
  @ApiIdempotentSend()
  execute(@Body() dto: ExecuteToolsDto, @IdempotencyKey() idempotency: IdempotentSend | undefined, @ClientSignal() signal: AbortSignal): Promise<ToolCallsResult> {
    const req = this.toRequest(dto);
    // a caller that hangs up stops the model call and the tools it would have run
    if (!idempotency) return this.orchestration.execute({ ...req, signal });
    // unless it named the send with a key: its retry gets the result, or continues the execution
    // when this instance dies (a stored decision and finished calls are not run again)
    return this.keyed.run(req.projectId, idempotency, req.requestId, (k) => this.orchestration.execute({ ...req, requestId: k.requestId, journal: k.journal, signal: k.signal }));
  }

  @Sse('execute/stream', { method: RequestMethod.POST })
  @StartsTurn()
  @ProjectScope('projectId')
  @HttpCode(200)
  @ApiOperation({ operationId: 'executeToolsStream', summary: 'The same, as SSE: progress events (PrepareTools, LLMDecision, ExecuteTool with index, Finished) then one result' })
  @ApiSseResponse({ description: 'progress events, one per stage, then one result event (a ToolCallsResult)', events: { progress: ExecuteProgressEventDto, result: ToolCallsResultDto }, union: 'ExecuteStreamEvent' })
  @ApiBadRequestResponse({ description: 'invalid body, missing or unknown mode (before the stream starts)' })
  executeStream(@Body() dto: ExecuteToolsDto, @ClientSignal() signal: AbortSignal): Observable<MessageEvent> {
    // a missing or unknown mode is a 400 before the stream
    const req = this.toRequest(dto);
    // a caller that hangs up stops the model call and the tools it would have run; the stream's
    // teardown then returns the generator
    const gen = this.orchestration.executeModeStream({ ...req, signal });
    let seq = 0;
    const events = fromGenerator(gen, {
      each: (step): WireMessage => ({ id: ++seq, type: 'progress', data: { requestId: req.requestId, seq, ...step } }),
      last: (result): WireMessage => ({ id: ++seq, type: 'result', data: result }),
    });
    return toMessageEvents(events);
  }

  @Get('tool-index/search')
  @AnyProject()
  @ApiOperation({ operationId: 'searchToolIndex', summary: 'The NarrowTopK candidates for a query, with their absolute scores (0..1; available tools only, as NarrowTopK sees them)' })
  @ApiOkResponse({ type: [ToolIndexHitDto] })
  async search(@Query() q: ToolIndexSearchQueryDto): Promise<ToolIndexHitDto[]> {
    const available = new Set((await this.tools.specs()).map((s) => s.name));
    return this.index.retrieve(q.q, q.k ?? 5, q.minScore ?? 0, (name) => available.has(name));
  }

  /** The mode and the options the request leaves out come from the configuration (OrchestrationService). */
  private toRequest(dto: ExecuteToolsDto): ExecuteModeRequest & { requestId: string } {
    return {
      requestId: randomUUID(),
      userInput: dto.userInput,
      participantIds: dto.participantIds ?? [],
      projectId: dto.projectId ?? 'default',
      mode: this.orchestration.resolveMode(dto.mode),
      options: this.orchestration.modeOptions(dto.options ?? {}),
      approvedCalls: (dto.approvedCalls ?? []).map((c) => ({ tool: c.tool, arguments: c.arguments })),
    };
  }
}
