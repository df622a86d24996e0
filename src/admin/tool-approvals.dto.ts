import { ApiProperty } from '@nestjs/swagger';
import { ArrayMaxSize, IsArray, IsString, Matches, MaxLength } from 'class-validator';
import { PROJECT_ID_MESSAGE, PROJECT_ID_PATTERN } from '../common/workspace/project-id';

/** A tool name or a glob over tool names (`*` = any characters): the characters a registry name can have, plus `*`. */
const PATTERN = /^[A-Za-z0-9_*-]{1,128}$/;
const PATTERN_MESSAGE = 'each entry must be a tool name or glob: 1-128 characters of A-Z, a-z, 0-9, _, - or *';

export class ProjectIdParamDto {
  @ApiProperty({ example: 'default', pattern: '^[A-Za-z0-9_-]{1,64}$' })
  @Matches(PROJECT_ID_PATTERN, { message: PROJECT_ID_MESSAGE })
  projectId: string;
}

/** Body of `PUT /api/admin/projects/:projectId/tool-approvals`: replaces the project's override. */
export class PutToolApprovalsDto {
  @ApiProperty({ type: [String], maxItems: 200, example: ['fs__*', 'read_file'], description: 'names or globs whose calls wait for a person in this project' })
  @IsArray() @ArrayMaxSize(200) @IsString({ each: true }) @MaxLength(128, { each: true }) @Matches(PATTERN, { each: true, message: PATTERN_MESSAGE })
  require: string[];

  @ApiProperty({ type: [String], maxItems: 200, example: ['fs__read*', 'fs__list*'], description: 'names or globs whose calls need no approval in this project' })
  @IsArray() @ArrayMaxSize(200) @IsString({ each: true }) @MaxLength(128, { each: true }) @Matches(PATTERN, { each: true, message: PATTERN_MESSAGE })
  exempt: string[];
}

export class ToolApprovalsDto {
  @ApiProperty({ example: 'default' }) projectId: string;
  @ApiProperty({ type: [String] }) require: string[];
  @ApiProperty({ type: [String] }) exempt: string[];
  @ApiProperty({ nullable: true, type: String, format: 'date-time', description: 'null: the project has no override (the configuration alone decides)' })
  updatedAt: string | null;
  @ApiProperty({ nullable: true, type: String, description: 'key name and id of the admin who set it' }) updatedBy: string | null;
}
