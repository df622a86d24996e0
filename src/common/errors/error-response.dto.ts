import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';

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
    description: 'what went wrong; validation errors list every failed constraint',
  })
  message: string | string[];
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
