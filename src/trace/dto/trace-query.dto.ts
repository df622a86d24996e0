import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
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
  @ApiProperty() id: number;
  @ApiProperty({ nullable: true, type: String }) requestId: string | null;
  @ApiProperty({ nullable: true, type: String }) projectId: string | null;
  @ApiProperty({ example: 'orchestration_phase_end' }) type: string;
  @ApiProperty({ type: Object, example: { phase: 'tool_phase', phaseIndex: 2, cycleIndex: 1, reason: 'success' } }) details: Record<string, unknown>;
  @ApiProperty() createdAt: string;
}
