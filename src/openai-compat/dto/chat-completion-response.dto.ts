import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';

export class OpenAiErrorDetailDto {
  @ApiProperty() message: string;
  @ApiProperty({ enum: ['invalid_request_error', 'authentication_error', 'permission_error', 'not_found_error', 'rate_limit_error', 'server_error'] }) type: string;
  @ApiProperty({ type: String, nullable: true, description: 'the request parameter at fault' }) param: string | null;
  @ApiProperty({ type: String, nullable: true, example: 'model_not_found', description: 'unsupported_parameter, unknown_parameter, invalid_value, invalid_json, model_not_found, or Orion\'s own code (conversation_not_found, too_many_requests, llm_timeout…)' })
  code: string | null;
}

/** Every error answer of the /v1 routes: OpenAI's shape. */
export class OpenAiErrorResponseDto {
  @ApiProperty({ type: OpenAiErrorDetailDto }) error: OpenAiErrorDetailDto;
}

export class OpenAiModelDto {
  @ApiProperty({ example: 'orion-unified' }) id: string;
  @ApiProperty({ enum: ['model'] }) object: string;
  @ApiProperty({ description: 'Unix seconds (when this instance started)' }) created: number;
  @ApiProperty({ example: 'orion' }) owned_by: string;
}

export class OpenAiModelListDto {
  @ApiProperty({ enum: ['list'] }) object: string;
  @ApiProperty({ type: [OpenAiModelDto] }) data: OpenAiModelDto[];
}

export class CompletionUsageDto {
  @ApiProperty({ description: 'summed over every model call of the turn' }) prompt_tokens: number;
  @ApiProperty() completion_tokens: number;
  @ApiProperty() total_tokens: number;
  @ApiPropertyOptional({ description: 'added (issue 46): `{cached_tokens}` where the provider reported them' }) prompt_tokens_details?: { cached_tokens: number };
  @ApiPropertyOptional({ description: 'added (issue 46): `{reasoning_tokens}` where the provider reported them' }) completion_tokens_details?: { reasoning_tokens: number };
  @ApiPropertyOptional({ description: 'added (issue 46): the turn\'s cost from LLM_PRICES; absent when the model has no price' }) orion_cost?: number;
  @ApiPropertyOptional({ description: 'added (issue 46): true when some call reported no usage and was counted with a tokenizer' }) orion_estimated?: boolean;
}

export class OrionCompletionExtensionDto {
  @ApiProperty({ format: 'uuid', description: 'the run (run control, GET /api/trace?requestId=)' }) request_id: string;
  @ApiProperty({ format: 'uuid', description: 'the conversation the turn was stored in; send it as X-Orion-Conversation to continue it' }) conversation_id: string;
  @ApiProperty({ example: 'final_answer', description: 'the done event\'s stopReason, or paused' }) stop_reason: string;
}

export class CompletionMessageDto {
  @ApiProperty({ enum: ['assistant'] }) role: string;
  @ApiProperty() content: string;
  @ApiProperty({ type: String, nullable: true }) refusal: null;
  @ApiPropertyOptional({ type: [String], description: 'with X-Orion-Progress: true, the turn\'s tool steps as readable lines' }) orion_progress?: string[];
}

export class CompletionChoiceDto {
  @ApiProperty({ enum: [0] }) index: number;
  @ApiProperty({ type: CompletionMessageDto }) message: CompletionMessageDto;
  @ApiProperty({ enum: ['stop', 'length'] }) finish_reason: string;
  @ApiProperty({ type: Object, nullable: true }) logprobs: null;
}

/** `stream: false`: the answer. */
export class ChatCompletionDto {
  @ApiProperty({ example: 'chatcmpl-0f8f…', description: '"chatcmpl-" + the run\'s requestId' }) id: string;
  @ApiProperty({ enum: ['chat.completion'] }) object: string;
  @ApiProperty() created: number;
  @ApiProperty({ description: 'the model the turn talked to' }) model: string;
  @ApiProperty({ type: [CompletionChoiceDto] }) choices: CompletionChoiceDto[];
  @ApiProperty({ type: CompletionUsageDto }) usage: CompletionUsageDto;
  @ApiProperty({ type: OrionCompletionExtensionDto }) orion: OrionCompletionExtensionDto;
}

export class ChunkDeltaDto {
  @ApiPropertyOptional({ enum: ['assistant'], description: 'first chunk only' }) role?: string;
  @ApiPropertyOptional() content?: string;
  @ApiPropertyOptional({ description: 'with X-Orion-Progress: true, one tool step as a readable line' }) orion_progress?: string;
}

export class ChunkChoiceDto {
  @ApiProperty({ enum: [0] }) index: number;
  @ApiProperty({ type: ChunkDeltaDto }) delta: ChunkDeltaDto;
  @ApiProperty({ type: String, enum: ['stop', 'length'], nullable: true }) finish_reason: string | null;
  @ApiProperty({ type: Object, nullable: true }) logprobs: null;
}

/** `stream: true`: one `data:` message; the stream ends with `data: [DONE]`. */
export class ChatCompletionChunkDto {
  @ApiProperty() id: string;
  @ApiProperty({ enum: ['chat.completion.chunk'] }) object: string;
  @ApiProperty() created: number;
  @ApiProperty() model: string;
  @ApiProperty({ type: [ChunkChoiceDto] }) choices: ChunkChoiceDto[];
  @ApiPropertyOptional({ type: CompletionUsageDto, description: 'on the final chunk, with stream_options.include_usage' }) usage?: CompletionUsageDto;
  @ApiPropertyOptional({ type: OrionCompletionExtensionDto, description: 'on the final chunk' }) orion?: OrionCompletionExtensionDto;
}
