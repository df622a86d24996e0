import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { Allow, ArrayMinSize, IsArray, IsBoolean, IsInt, IsNumber, IsObject, IsOptional, IsString, Max, MaxLength, Min, ValidateNested } from 'class-validator';

/** `stream_options` of a chat completion request. */
export class StreamOptionsDto {
  @ApiPropertyOptional({ description: 'the final chunk (the one with finish_reason) carries `usage`' })
  @IsOptional() @IsBoolean()
  include_usage?: boolean;
}

/** One message of `messages` (checked field by field when the turn is built: roles, text parts). */
export class ChatCompletionMessageDto {
  @ApiProperty({ enum: ['system', 'developer', 'user', 'assistant'], description: '`tool` and `function` messages are refused: Orion runs its tools itself' })
  role: string;

  @ApiProperty({
    oneOf: [{ type: 'string' }, { type: 'array', items: { type: 'object', properties: { type: { type: 'string', enum: ['text'] }, text: { type: 'string' } } } }],
    description: 'text, or an array of text parts (other part types are refused)',
  })
  content: unknown;

  @ApiPropertyOptional({ description: 'accepted, not read' })
  name?: string;
}

/**
 * Body of `POST /v1/chat/completions`: OpenAI's parameters. Sampling parameters are accepted and
 * not applied (Orion picks them per turn); what Orion cannot honour is refused
 * (chat-completion-request.ts).
 */
export class ChatCompletionRequestDto {
  @ApiProperty({ example: 'orion-unified', description: '`orion-unified`, `orion-two-stage` (TWO_STAGE_ENABLED only) or one of LLM_MODELS (GET /v1/models lists them)' })
  @IsString() @MaxLength(200)
  model: string;

  @ApiProperty({ type: [ChatCompletionMessageDto], description: 'the conversation so far, the last one a user message' })
  @IsArray() @ArrayMinSize(1, { message: 'messages must contain at least one message' }) @IsObject({ each: true, message: 'each message must be an object' })
  messages: ChatCompletionMessageDto[];

  @ApiPropertyOptional({ default: false, description: 'true: `chat.completion.chunk`s as Server-Sent Events, then `data: [DONE]`' })
  @IsOptional() @IsBoolean()
  stream?: boolean;

  @ApiPropertyOptional({ type: StreamOptionsDto })
  @IsOptional() @ValidateNested() @Type(() => StreamOptionsDto)
  stream_options?: StreamOptionsDto;

  @ApiPropertyOptional({ minimum: 1, maximum: 1, description: 'only 1' })
  @IsOptional() @IsInt()
  n?: number;

  @ApiPropertyOptional({ description: 'only false' })
  @IsOptional() @IsBoolean()
  logprobs?: boolean;

  @ApiPropertyOptional({ description: 'accepted, not applied (the turn\'s mode picks the temperature)' })
  @IsOptional() @IsNumber() @Min(0) @Max(2)
  temperature?: number;

  @ApiPropertyOptional({ description: 'accepted, not applied' })
  @IsOptional() @IsNumber() @Min(0) @Max(1)
  top_p?: number;

  @ApiPropertyOptional({ description: 'accepted, not applied' })
  @IsOptional() @IsInt() @Min(1)
  max_tokens?: number;

  @ApiPropertyOptional({ description: 'accepted, not applied' })
  @IsOptional() @IsInt() @Min(1)
  max_completion_tokens?: number;

  @ApiPropertyOptional({ description: 'accepted, not applied' })
  @IsOptional() @IsNumber() @Min(-2) @Max(2)
  frequency_penalty?: number;

  @ApiPropertyOptional({ description: 'accepted, not applied' })
  @IsOptional() @IsNumber() @Min(-2) @Max(2)
  presence_penalty?: number;

  @ApiPropertyOptional({ oneOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' } }], description: 'accepted, not applied' })
  @Allow()
  stop?: string | string[];

  @ApiPropertyOptional({ description: 'accepted, not applied' })
  @IsOptional() @IsInt()
  seed?: number;

  @ApiPropertyOptional({ description: 'accepted, not applied' })
  @IsOptional() @IsString() @MaxLength(256)
  user?: string;

  @ApiPropertyOptional({ type: Object, description: 'accepted, not applied' })
  @IsOptional() @IsObject()
  metadata?: Record<string, unknown>;

  @ApiPropertyOptional({ description: 'accepted, not applied (Orion stores every turn)' })
  @IsOptional() @IsBoolean()
  store?: boolean;

  @ApiPropertyOptional({ description: 'accepted, not applied' })
  @IsOptional() @IsString()
  reasoning_effort?: string;

  @ApiPropertyOptional({ description: 'accepted, not applied' })
  @IsOptional() @IsString()
  verbosity?: string;

  @ApiPropertyOptional({ description: 'accepted, not applied' })
  @IsOptional() @IsString()
  service_tier?: string;

  @ApiPropertyOptional({ description: 'accepted, not applied (there are no client tools)' })
  @IsOptional() @IsBoolean()
  parallel_tool_calls?: boolean;

  @ApiPropertyOptional({ type: Object, description: 'only `{"type": "text"}`' })
  @IsOptional() @IsObject()
  response_format?: { type: string };
}
