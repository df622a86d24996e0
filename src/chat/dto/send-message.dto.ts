import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { MULTITASK_STRATEGIES, type MultitaskStrategy } from '../../config/env.schema';
import { IsBoolean, IsIn, IsInt, IsOptional, IsString, IsUrl, IsUUID, Matches, Max, MaxLength, Min, MinLength, ValidateNested } from 'class-validator';

import { PROJECT_ID_MESSAGE, PROJECT_ID_PATTERN } from '../../common/workspace/project-id';
import { WEBHOOK_URL_MAX, WEBHOOK_URL_RULE } from '../../webhooks/dto/webhook.dto';

export class SendMessageOptionsDto {
  @ApiPropertyOptional({ minimum: 1, maximum: 20, default: 3, description: 'two-stage: tool executions per turn' })
  @IsOptional() @IsInt() @Min(1) @Max(20)
  maxPhaseCycles?: number;

  @ApiPropertyOptional({ minimum: 1, maximum: 20, default: 3, description: 'both routes: loop strikes (refused repeats, repeated rerun results) before a forced final answer' })
  @IsOptional() @IsInt() @Min(1) @Max(20)
  maxDuplicateAttempts?: number;

  @ApiPropertyOptional({ minimum: 1, maximum: 20, default: 10, description: 'unified: agent loop steps' })
  @IsOptional() @IsInt() @Min(1) @Max(20)
  maxIterations?: number;

  @ApiPropertyOptional({ minimum: 100, maximum: 10000000, description: 'added (issue 46): both routes: tokens this turn may use before its forced final answer (stopReason token_budget); default TURN_TOKEN_BUDGET' })
  @IsOptional() @IsInt({ message: 'options.turnTokenBudget must be an integer' }) @Min(100) @Max(10_000_000)
  turnTokenBudget?: number;

  @ApiPropertyOptional({ default: false, description: 'include raw tool output in tool_progress events' })
  @IsOptional() @IsBoolean()
  debugShowToolResults?: boolean;

  @ApiPropertyOptional({ default: false, description: 'keep the run going after the client disconnects (follow it via /api/chat/runs/:requestId/events)' })
  @IsOptional() @IsBoolean()
  detach?: boolean;

  @ApiPropertyOptional({ maxLength: 200, description: 'added (issue 13): the model for this turn, one of LLM_MODELS (GET /api/config/capabilities lists them); beats the conversation setting' })
  @IsOptional() @IsString({ message: 'options.model must be a string' }) @MinLength(1) @MaxLength(200)
  model?: string;

  @ApiPropertyOptional({ minimum: 1000, maximum: 86400000, description: 'added (issue 32): how long a tool call waits for a person before it counts as denied (reason timeout); default APPROVAL_TIMEOUT_MS' })
  @IsOptional() @IsInt({ message: 'options.approvalTimeoutMs must be an integer' }) @Min(1000) @Max(86_400_000)
  approvalTimeoutMs?: number;
  @ApiPropertyOptional({
    enum: MULTITASK_STRATEGIES,
    description:
      'added (issue 33): what this message does while its conversation\'s previous turn is active: reject (409 conversation_busy), enqueue (queued; starts when it ends), interrupt (cancels it, keeping its partial answer), rollback (cancels it and removes it from the history); default CONVERSATION_MULTITASK',
  })
  @IsOptional() @IsIn(MULTITASK_STRATEGIES as unknown as string[], { message: `options.multitask must be one of ${MULTITASK_STRATEGIES.join(', ')}` })
  multitask?: MultitaskStrategy;
}

/** Body of POST /api/chat/messages and /api/chat/messages_two_stage. */
export class SendMessageDto {
  @ApiPropertyOptional({ default: 'default', pattern: PROJECT_ID_PATTERN.source })
  @IsOptional() @Matches(PROJECT_ID_PATTERN, { message: PROJECT_ID_MESSAGE })
  projectId?: string;

  @ApiPropertyOptional({ format: 'uuid', description: 'omitted: a new conversation' })
  @IsOptional() @IsUUID('all', { message: 'conversationId must be a UUID' })
  conversationId?: string;

  @ApiProperty({ minLength: 1, maxLength: 32000, example: 'Summarize docs/roadmap.md' })
  @IsString({ message: 'content must be a string' }) @MinLength(1, { message: 'content must not be empty' }) @MaxLength(32000)
  content: string;

  @ApiPropertyOptional({
    maxLength: WEBHOOK_URL_MAX,
    example: 'http://127.0.0.1:8787/orion-webhook',
    description: 'added (issue 33): where the run\'s end is announced, a signed POST (docs/API.md, Webhooks); beats the project\'s default URL',
  })
  @IsOptional() @IsUrl(WEBHOOK_URL_RULE, { message: 'webhookUrl must be an http(s) URL' }) @MaxLength(WEBHOOK_URL_MAX, { message: `webhookUrl must be at most ${WEBHOOK_URL_MAX} characters` })
  webhookUrl?: string;

  @ApiPropertyOptional({ enum: ['act', 'plan'], default: 'act', description: 'plan: temperature 0.7, act: 0.3' })
  @IsOptional() @IsIn(['act', 'plan'], { message: 'mode must be "act" or "plan"' })
  mode?: 'act' | 'plan';

  @ApiPropertyOptional({ type: SendMessageOptionsDto })
  @IsOptional() @ValidateNested() @Type(() => SendMessageOptionsDto)
  options?: SendMessageOptionsDto;
}

export class ConversationSettingsDto {
  @ApiPropertyOptional({ description: 'per-conversation override of ORCHESTRATOR_ENABLED; null clears it' })
  @IsOptional() @IsBoolean()
  orchestratorEnabled?: boolean;

  @ApiPropertyOptional({ maxLength: 4000, description: 'custom instructions added to the system prompt' })
  @IsOptional() @IsString() @MaxLength(4000)
  customInstructions?: string;

  @ApiPropertyOptional({ maxLength: 200, description: 'added (issue 13): the model of the conversation\'s turns, one of LLM_MODELS; a message\'s options.model beats it' })
  @IsOptional() @IsString({ message: 'model must be a string' }) @MinLength(1) @MaxLength(200)
  model?: string;

  @ApiPropertyOptional({ enum: ['policy', 'always'], description: 'added (issue 32): which tool calls wait for a person: the tools\' approval policy (default), or every call' })
  @IsOptional() @IsIn(['policy', 'always'], { message: 'approvals must be "policy" or "always"' })
  approvals?: 'policy' | 'always';
}

export class ListConversationsQueryDto {
  @ApiPropertyOptional({ default: 'default' })
  @IsOptional() @Matches(PROJECT_ID_PATTERN, { message: PROJECT_ID_MESSAGE })
  projectId?: string;
}

/** Body of POST /api/chat/messages_two_stage/resume. */
export class ResumeRunDto {
  @ApiProperty({ format: 'uuid' })
  @IsUUID('all', { message: 'requestId must be a UUID' })
  requestId: string;

  @ApiProperty({ minimum: 1, description: 'the phase whose checkpoint the run continues from (the paused event says which)' })
  @IsInt({ message: 'resumeFromPhaseIndex must be an integer' }) @Min(1)
  resumeFromPhaseIndex: number;
}

/** Body of POST /api/chat/runs/:requestId/fork. */
export class ForkRunDto {
  @ApiProperty({ minimum: 1, description: 'the phase whose checkpoint the fork continues from (one of the run\'s checkpoints)' })
  @IsInt({ message: 'fromPhaseIndex must be an integer' }) @Min(1)
  fromPhaseIndex: number;
}
