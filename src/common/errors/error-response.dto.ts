import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';

/**
 * The body of every error answer (AllExceptionsFilter): Nest's shape, with the domain code in
 * `error` when there is one. Some codes add fields (a refused resume or fork lists the run's `checkpoints`).
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
}
