import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';

/** One bad field of a 400 (issue #42): its path and the message about it. */
export class FieldErrorDto {
  @ApiProperty({ example: 'options.multitask', description: 'the field by its whole path (`options.multitask`, `messages[0].role`); a path parameter by its name' })
  field: string;
  @ApiProperty({ example: 'options.multitask must be one of reject, enqueue, interrupt, rollback', description: 'what is wrong and what to send; the same string as in `message`' })
  message: string;
}

/**
 * The body of every error answer (AllExceptionsFilter): Nest's shape, with the domain code in
 * `error` when there is one. Some codes add fields (a refused resume or fork lists the run's
 * `checkpoints`, a 429 its `limit`, `max` and `retryAfter`). The OpenAPI document shows one
 * example per code (common/openapi/error-examples.ts).
 */
export class ErrorResponseDto {
  @ApiProperty({ example: 404 }) statusCode: number;
  @ApiProperty({ example: 'run_not_found', description: 'a domain code (snake_case) or the HTTP status text (Bad Request, Unauthorized, …)' })
  error: string;
  @ApiProperty({
    oneOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' } }],
    example: 'No run 0f8fad5b-d9cb-469f-a165-70867728950e',
    description: 'what went wrong; a validation failure lists one message per bad field, each naming the field by its path',
  })
  message: string | string[];
  @ApiPropertyOptional({ type: [FieldErrorDto], description: 'a validation failure: the bad fields, each with its message (the same strings as `message`)' })
  fields?: FieldErrorDto[];
  @ApiPropertyOptional({ type: [Number], description: 'a refused resume or fork: the phase indexes with a stored checkpoint (a paused run resumes from the last; a fork may start from any)' })
  checkpoints?: number[];
  @ApiPropertyOptional({ type: [String], description: 'model_not_allowed: the models LLM_MODELS allows' })
  allowed?: string[];
  @ApiPropertyOptional({ description: 'too_many_requests: the setting whose limit was reached (RATE_LIMIT_PER_MINUTE, MAX_CONCURRENT_TURNS_PER_KEY, …)' })
  limit?: string;
  @ApiPropertyOptional({ description: 'too_many_requests: that setting\'s value' })
  max?: number;
  @ApiPropertyOptional({ description: 'too_many_requests: seconds until a retry may succeed (also the Retry-After header)' })
  retryAfter?: number;
  @ApiPropertyOptional({ format: 'uuid', description: 'run_in_progress: the run still running' })
  requestId?: string;
}
