import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsInt, IsOptional, IsString, Matches, Max, MaxLength, Min, MinLength } from 'class-validator';
import { MAX_PATH_CHARS } from '../../common/workspace/workspace-path.util';
import { PROJECT_ID_MESSAGE, PROJECT_ID_PATTERN } from '../../common/workspace/project-id';
import { RETRIEVAL_MAX_TOP_K } from '../knowledge.service';

/** Module names given explicitly: a letter or digit, then letters, digits, spaces, `_`, `.` or `-`. */
export const MODULE_NAME_PATTERN = /^[\p{L}\p{N}][\p{L}\p{N} _.-]{0,63}$/u;

/** Body of `POST /api/knowledge/ingest`. */
export class IngestKnowledgeDto {
  @ApiPropertyOptional({ default: 'default', pattern: PROJECT_ID_PATTERN.source })
  @IsOptional() @IsString({ message: 'projectId must be a string' }) @Matches(PROJECT_ID_PATTERN, { message: PROJECT_ID_MESSAGE })
  projectId?: string;

  @ApiPropertyOptional({
    description: 'module of every file ingested now; default: the top-level folder of each file ("general" for files at the project root)',
    example: 'roadmap',
    maxLength: 64,
  })
  @IsOptional() @IsString({ message: 'module must be a string' })
  @Matches(MODULE_NAME_PATTERN, { message: 'module must be 1-64 letters, digits, spaces, _, . or -, starting with a letter or digit' })
  module?: string;

  @ApiPropertyOptional({
    description: 'folder or file to ingest, relative to the project folder; default the whole project. Paths that leave the project are refused (400).',
    example: 'docs',
    default: '.',
    maxLength: MAX_PATH_CHARS,
  })
  @IsOptional() @IsString({ message: 'path must be a string' }) @MinLength(1, { message: 'path must not be empty (omit it for the whole project)' })
  @MaxLength(MAX_PATH_CHARS)
  path?: string;
}

/** Query of `GET /api/knowledge/modules`. */
export class KnowledgeModulesQueryDto {
  @ApiPropertyOptional({ default: 'default', pattern: PROJECT_ID_PATTERN.source })
  @IsOptional() @IsString({ message: 'projectId must be a single string' }) @Matches(PROJECT_ID_PATTERN, { message: PROJECT_ID_MESSAGE })
  projectId?: string;
}

/** Query of `GET /api/knowledge/search` (what rag_query runs, for people and tests). */
export class KnowledgeSearchQueryDto {
  @ApiPropertyOptional({ default: 'default', pattern: PROJECT_ID_PATTERN.source })
  @IsOptional() @IsString({ message: 'projectId must be a single string' }) @Matches(PROJECT_ID_PATTERN, { message: PROJECT_ID_MESSAGE })
  projectId?: string;

  @ApiProperty({ description: 'the question', example: 'how do I install it?', minLength: 1, maxLength: 2000 })
  @IsString({ message: 'q must be a single string' }) @MinLength(1, { message: 'q must not be empty' }) @MaxLength(2000)
  q: string;

  @ApiPropertyOptional({ minimum: 1, maximum: RETRIEVAL_MAX_TOP_K, default: 5 })
  @IsOptional() @Type(() => Number) @IsInt({ message: 'topK must be an integer' }) @Min(1) @Max(RETRIEVAL_MAX_TOP_K)
  topK?: number;
}
