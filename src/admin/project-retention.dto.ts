import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional, registerDecorator, ValidateIf } from 'class-validator';
import { isDurationOrOff } from '../config/duration';

const DURATION_MESSAGE = 'must be a duration (a whole number and a unit: ms, s, m, h, d, w, e.g. 90s, 12h, 30d; at most 10 years), "forever", or null for the deployment\'s value';

function IsRetention(): PropertyDecorator {
  return (target, key) =>
    registerDecorator({
      name: 'isRetention',
      target: target.constructor,
      propertyName: key as string,
      validator: { validate: (v: unknown) => isDurationOrOff(v), defaultMessage: () => `${String(key)} ${DURATION_MESSAGE}` },
    });
}

const FIELD = (what: string) => ({
  type: String,
  nullable: true,
  description: `how long ${what} are kept: a duration (\`90s\`, \`12h\`, \`30d\`), \`forever\` (or \`off\`), or null for the deployment's value; omitted: unchanged`,
});

/** Body of PUT /api/admin/projects/:projectId/retention (issue 43). */
export class PutProjectRetentionDto {
  @ApiPropertyOptional({ ...FIELD('ended runs with their events, approvals and webhook rows'), example: '30d' })
  @IsOptional() @ValidateIf((_, v) => v !== null) @IsRetention()
  runs?: string | null;

  @ApiPropertyOptional({ ...FIELD('trace records (never a live or paused run\'s)'), example: '7d' })
  @IsOptional() @ValidateIf((_, v) => v !== null) @IsRetention()
  trace?: string | null;

  @ApiPropertyOptional({ ...FIELD('conversations not written to, with their messages and runs'), example: 'forever' })
  @IsOptional() @ValidateIf((_, v) => v !== null) @IsRetention()
  conversations?: string | null;
}

export class RetentionValuesDto {
  @ApiProperty({ type: String, nullable: true, example: '30d', description: 'a duration, `forever`, or null (the deployment\'s value)' }) runs: string | null;
  @ApiProperty({ type: String, nullable: true, example: '7d' }) trace: string | null;
  @ApiProperty({ type: String, nullable: true, example: null }) conversations: string | null;
}

export class EffectiveRetentionDto {
  @ApiProperty({ example: '30d', description: 'a duration or `forever`' }) runs: string;
  @ApiProperty({ example: '7d' }) trace: string;
  @ApiProperty({ example: 'forever' }) conversations: string;
}

export class ProjectRetentionDto {
  @ApiProperty({ example: 'default' }) projectId: string;
  @ApiProperty({ type: RetentionValuesDto, description: 'the project\'s own values' }) project: RetentionValuesDto;
  @ApiProperty({ type: RetentionValuesDto, description: 'the deployment\'s (RETENTION_RUNS, RETENTION_TRACE, RETENTION_CONVERSATIONS; null: kept for ever)' }) deployment: RetentionValuesDto;
  @ApiProperty({ type: EffectiveRetentionDto, description: 'what the storage worker applies to this project' }) effective: EffectiveRetentionDto;
  @ApiProperty({ type: String, nullable: true, format: 'date-time', description: 'when the project\'s values were last set; null: never' }) updatedAt: string | null;
}
