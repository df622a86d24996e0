import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional, IsString, Matches } from 'class-validator';

/** Query of `GET /api/tools`. */
export class ToolsQueryDto {
  @ApiPropertyOptional({
    description: "Project whose tools to list (default `default`). Every project sees the same tools; each tool's `approval` applies this project's override.",
    example: 'default',
    pattern: '^[A-Za-z0-9_-]{1,64}$',
  })
  @IsOptional()
  @IsString({ message: 'projectId must be a single string' })
  @Matches(/^[A-Za-z0-9_-]{1,64}$/, { message: 'projectId must match [A-Za-z0-9_-]{1,64}' })
  projectId?: string;
}
