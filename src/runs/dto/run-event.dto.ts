import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';

/**
 * The `data` of each SSE event of a chat run, for the OpenAPI document (docs/API.md "Events"
 * says the same in prose). The wire is produced by RunStream from ProtocolEvent; these classes
 * only describe it. Fields may be added to an event, never renamed or dropped.
 */
export class RunEventEnvelopeDto {
  @ApiProperty({ format: 'uuid' }) requestId: string;
  @ApiProperty({ example: 'default' }) projectId: string;
  @ApiProperty({ format: 'uuid' }) conversationId: string;
  @ApiProperty({ description: '1, 2, 3… per run with no gaps; equal to the SSE id' }) seq: number;
  @ApiProperty({ enum: ['action_phase', 'tool_phase', 'complete'] }) phase: string;
  @ApiProperty({ description: '1, 2, 3… one per phase; 0 before the first phase' }) phaseIndex: number;
  @ApiProperty({ description: 'the tool step in progress: 0 until the first tool phase' }) cycleIndex: number;
}

export class StartEventDto extends RunEventEnvelopeDto {
  @ApiProperty({ enum: ['two-stage', 'unified', 'command'] }) protocol: string;
  @ApiProperty({ nullable: true, type: String, description: 'the stored user message' }) userMessageId: string | null;
  @ApiPropertyOptional({ description: 'added (issue 13): the model the turn talks to (LLM_MODELS)' }) model?: string;
  @ApiPropertyOptional({ description: 'true on a resumed stream' }) resumed?: boolean;
  @ApiPropertyOptional({ description: 'a resumed stream: the checkpoint it continues from' }) resumeFromPhaseIndex?: number;
  @ApiPropertyOptional({ description: 'added (issue 44): another instance continues a run whose instance died (while it ran or awaited approval)' }) takeover?: boolean;
  @ApiPropertyOptional({
    description: 'added (issue 44): on a takeover of a run cut off mid-phase, the events from this seq up to this start are superseded (the phase cut short, which the continuation runs again): a client drops the text it got from them',
  })
  supersedesFromSeq?: number;
  @ApiPropertyOptional({ format: 'uuid', description: 'added: a fork (a resume from an older checkpoint, or of a finished run) is a new run; this is the run it was forked from, whose checkpoint resumeFromPhaseIndex names' }) parentRequestId?: string;
}

/** added (issue 33): a message queued behind its conversation's active turn; seq 0, not stored */
export class QueuedEventDto extends RunEventEnvelopeDto {
  @ApiProperty({ description: '1 for the next turn to start' }) position: number;
  @ApiProperty({ format: 'uuid', description: 'the turn it waits for' }) activeRequestId: string;
}

export class PhaseEventDto extends RunEventEnvelopeDto {
  @ApiProperty({ enum: ['start', 'end'] }) status: string;
  @ApiPropertyOptional({ description: 'why a phase ended: an action phase tool_call (two-stage), tool_calls (unified), final_answer, max_tokens, cycle_budget, duplicate_limit, no_progress, content_loop, max_iterations, cancelled or error; a tool phase its tool outcome (success, tool_errors, timeout, …)' }) reason?: string;
}

export class ChunkEventDto extends RunEventEnvelopeDto {
  @ApiProperty({ description: 'answer text to append' }) content: string;
}

export class ToolCallViewDto {
  @ApiProperty() id: string;
  @ApiProperty() name: string;
  @ApiProperty({ description: 'the arguments as a JSON string; secret arguments masked' }) arguments: string;
}

export class ToolCallsEventDto extends RunEventEnvelopeDto {
  @ApiProperty({ type: [ToolCallViewDto] }) calls: ToolCallViewDto[];
}

export class ToolProgressEventDto extends RunEventEnvelopeDto {
  @ApiProperty() tool: string;
  @ApiProperty() callId: string;
  @ApiProperty({ enum: ['calling', 'completed', 'failed', 'refused'] }) action: string;
  @ApiProperty({ type: Object, description: 'the validated arguments, secrets masked' }) params: Record<string, unknown>;
  @ApiProperty() isError: boolean;
  @ApiPropertyOptional({ enum: ['success', 'validation_error', 'unavailable', 'rate_limited', 'timeout', 'exception', 'cancelled', 'duplicate', 'denied', 'interrupted'] }) outcome?: string;
  @ApiPropertyOptional({ description: 'the raw tool output, only when the request set debugShowToolResults' }) output?: unknown;
  @ApiPropertyOptional({ description: 'on completed / failed: how long the call ran' }) durationMs?: number;
}

export class ToolPhaseEventDto extends RunEventEnvelopeDto {
  @ApiProperty({ example: 'rag_query' }) toolId: string;
  @ApiProperty({ example: 'searching', description: 'searching, ranking, fetching, mcp_progress, …' }) stage: string;
  @ApiProperty({ example: 'Searching the knowledge base…' }) message: string;
  @ApiPropertyOptional({ type: Object }) metadata?: Record<string, unknown>;
}

export class SourceDto {
  @ApiProperty({ enum: ['rag', 'web'] }) type: string;
  @ApiProperty() title: string;
  @ApiPropertyOptional() url?: string;
  @ApiPropertyOptional({ description: 'a knowledge-base document, relative to the project folder' }) path?: string;
  @ApiPropertyOptional() snippet?: string;
  @ApiPropertyOptional() score?: number;
  @ApiPropertyOptional({ enum: ['high', 'medium', 'low'] }) confidence?: string;
}

export class SourcesEventDto extends RunEventEnvelopeDto {
  @ApiProperty({ type: [SourceDto] }) data: SourceDto[];
  @ApiProperty({ type: [String], example: ['rag'] }) sourceTypes: string[];
  @ApiProperty() ragCount: number;
  @ApiProperty() webCount: number;
  @ApiProperty({ enum: ['high', 'medium', 'low', 'none'] }) confidence: string;
  @ApiProperty({ type: Object, nullable: true, description: 'the last retrieval\'s metrics ({method, candidates, returned, latencyMs, topScore}, plus ragCalls when retrieval ran more than once); null when no retrieval ran' })
  metrics: Record<string, unknown> | null;
}

export class NoticeEventDto extends RunEventEnvelopeDto {
  @ApiProperty({ enum: ['duplicate_tool_call', 'duplicate_limit_reached', 'cycle_budget_reached', 'invalid_tool_arguments', 'response_truncated', 'no_progress', 'content_loop', 'tool_interrupted'] }) code: string;
  @ApiProperty() message: string;
}

export class ErrorEventDto extends RunEventEnvelopeDto {
  @ApiProperty({ example: 'llm_timeout' }) code: string;
  @ApiProperty() message: string;
  @ApiProperty({ description: 'whether sending the same message again may succeed' }) retryable: boolean;
}

export class PausedEventDto extends RunEventEnvelopeDto {
  @ApiProperty({ description: 'pass it to POST /api/chat/messages_two_stage/resume' }) resumeFromPhaseIndex: number;
}

export class ApprovalRequiredEventDto extends RunEventEnvelopeDto {
  @ApiProperty({ format: 'uuid', description: 'added (issue 32): decide it with POST /api/chat/runs/:requestId/approvals/:approvalId' }) approvalId: string;
  @ApiProperty({ example: 'read_file' }) tool: string;
  @ApiProperty() callId: string;
  @ApiProperty({ type: Object, example: { path: 'docs/roadmap.md' }, description: 'the call\'s arguments as shown to users (secrets masked)' }) arguments: unknown;
  @ApiProperty({ example: 'configured', description: 'why it waits: configured, conversation_always, destructive, not_read_only, mcp_default_all' }) reason: string;
  @ApiProperty({ description: 'when it counts as denied (reason timeout)' }) expiresAt: string;
}

export class ApprovalDecidedEventDto extends RunEventEnvelopeDto {
  @ApiProperty({ format: 'uuid', description: 'added (issue 32)' }) approvalId: string;
  @ApiProperty({ enum: ['approve', 'deny'] }) decision: string;
  @ApiProperty({ description: 'approved with arguments a person edited' }) edited: boolean;
  @ApiProperty({ nullable: true, type: String, description: 'the API key id that decided; null without keys; timeout when it expired' }) by: string | null;
  @ApiPropertyOptional({ description: 'the decider\'s reason; timeout when it expired' }) reason?: string;
}

export class TurnUsageDto {
  @ApiProperty() promptTokens: number;
  @ApiProperty() completionTokens: number;
  @ApiProperty() totalTokens: number;
  @ApiProperty({ description: 'model calls of the turn' }) llmCalls: number;
  @ApiPropertyOptional({ description: 'added (issue 46): of completionTokens, reasoning tokens, where the provider reports them' }) reasoningTokens?: number;
  @ApiPropertyOptional({ description: 'added (issue 46): of promptTokens, tokens read from the prompt cache, where reported' }) cachedTokens?: number;
  @ApiPropertyOptional({ description: 'added (issue 46): true when some call reported no usage and its counts were estimated' }) estimated?: boolean;
  @ApiPropertyOptional({ description: 'added (issue 46): the largest single prompt of the turn' }) largestPromptTokens?: number;
  @ApiPropertyOptional({ description: 'added (issue 46): the turn\'s cost from LLM_PRICES (in the price table\'s currency); absent when the model has no price' }) cost?: number;
}

export class DoneEventDto extends RunEventEnvelopeDto {
  @ApiProperty({ description: 'the whole answer as stored' }) fullContent: string;
  @ApiProperty({ nullable: true, type: String, description: 'the stored assistant message' }) messageId: string | null;
  @ApiProperty({ enum: ['final_answer', 'cycle_budget', 'duplicate_limit', 'no_progress', 'content_loop', 'max_iterations', 'max_tokens', 'token_budget', 'cancelled', 'error'] }) stopReason: string;
  @ApiProperty({ type: TurnUsageDto }) usage: TurnUsageDto;
}

/**
 * Every event a chat run may send, by SSE event name. One entry per event type: the SSE routes'
 * schemas and the `RunEvent` union of the OpenAPI document (one type per event in generated
 * clients) are built from it.
 */
export const RUN_EVENTS = {
  start: StartEventDto,
  phase: PhaseEventDto,
  chunk: ChunkEventDto,
  tool_calls: ToolCallsEventDto,
  tool_progress: ToolProgressEventDto,
  tool_phase: ToolPhaseEventDto,
  sources: SourcesEventDto,
  notice: NoticeEventDto,
  error: ErrorEventDto,
  approval_required: ApprovalRequiredEventDto,
  approval_decided: ApprovalDecidedEventDto,
  paused: PausedEventDto,
  done: DoneEventDto,
  queued: QueuedEventDto,
};
