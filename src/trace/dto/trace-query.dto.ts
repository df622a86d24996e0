import { ApiPropertyOptional } from '@nestjs/swagger';
import { Transform, Type } from 'class-transformer';
import { IsInt, IsOptional, IsString, Matches, Max, MaxLength, Min } from 'class-validator';

export class TraceQueryDto {
  @ApiPropertyOptional({ description: 'only this turn' })
  @IsOptional() @IsString() @MaxLength(64)
  requestId?: string;

  @ApiPropertyOptional({ example: 'default' })
  @IsOptional() @Matches(/^[A-Za-z0-9_-]{1,64}$/, { message: 'projectId must match [A-Za-z0-9_-]{1,64}' })
  projectId?: string;

  @ApiPropertyOptional({ description: 'one type or several, comma-separated', example: 'tool_call,tool_result' })
  @IsOptional() @IsString() @MaxLength(500)
  @Transform(({ value }) => (typeof value === 'string' ? value.trim() : value))
  type?: string;

  @ApiPropertyOptional({ minimum: 1, maximum: 5000, default: 500 })
  @IsOptional() @Type(() => Number) @IsInt() @Min(1) @Max(5000)
  limit?: number;
}

export class TraceEventDto {
  id: number;
  requestId: string | null;
  projectId: string | null;
  type: string;
  details: Record<string, unknown>;
  createdAt: string;
}
