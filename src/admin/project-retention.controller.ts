import { Body, Controller, Get, Param, Put } from '@nestjs/common';
import { ApiBadRequestResponse, ApiForbiddenResponse, ApiOkResponse, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import { AdminOnly } from '../common/auth/admin-only.decorator';
import { durationOrOff, formatDuration } from '../config/duration';
import { AppConfigService } from '../config/app-config.service';
import { StorageRetentionRepository, type ProjectRetentionRow } from '../chat/repositories/storage-retention.repository';
import { WebhookProjectParamDto } from '../webhooks/dto/webhook.dto';
import { ProjectRetentionDto, PutProjectRetentionDto, type RetentionValuesDto } from './project-retention.dto';

type Kind = 'runs' | 'trace' | 'conversations';
const KINDS: readonly Kind[] = ['runs', 'trace', 'conversations'];
const ENV: Record<Kind, 'RETENTION_RUNS' | 'RETENTION_TRACE' | 'RETENTION_CONVERSATIONS'> = { runs: 'RETENTION_RUNS', trace: 'RETENTION_TRACE', conversations: 'RETENTION_CONVERSATIONS' };
const COLUMN: Record<Kind, 'runsMs' | 'traceMs' | 'conversationsMs'> = { runs: 'runsMs', trace: 'traceMs', conversations: 'conversationsMs' };

/** Stored milliseconds (null: the deployment's, -1: for ever) as the route shows them. */
const shown = (ms: number | null): string | null => (ms === null ? null : ms < 0 ? 'forever' : formatDuration(ms));
/** A validated body value as stored. */
const stored = (v: string | null): number | null => (v === null ? null : (durationOrOff(v) ?? -1));

/** A project's own retention (issue 43; docs/API.md, Storage): over the deployment's RETENTION_* values. */
@ApiTags('admin')
@AdminOnly()
@ApiForbiddenResponse({ description: 'the key is not an admin key for every project' })
@ApiParam({ name: 'projectId', description: 'the project' })
@Controller('api/admin/projects/:projectId/retention')
export class ProjectRetentionController {
  constructor(
    private readonly retention: StorageRetentionRepository,
    private readonly config: AppConfigService,
  ) {}

  @Get()
  @ApiOperation({ operationId: 'getProjectRetention', summary: "The project's own retention, the deployment's, and what applies" })
  @ApiOkResponse({ type: ProjectRetentionDto })
  @ApiBadRequestResponse({ description: 'invalid projectId' })
  async get(@Param() { projectId }: WebhookProjectParamDto): Promise<ProjectRetentionDto> {
    return this.view(projectId, await this.retention.projectRetention(projectId));
  }

  @Put()
  @ApiOperation({ operationId: 'putProjectRetention', summary: "Set the project's own retention of runs, trace records and conversations (omitted fields unchanged, null: the deployment's value)" })
  @ApiOkResponse({ type: ProjectRetentionDto })
  @ApiBadRequestResponse({ description: 'invalid projectId, or a value that is not a duration, forever or null (nothing is stored)' })
  async put(@Param() { projectId }: WebhookProjectParamDto, @Body() dto: PutProjectRetentionDto): Promise<ProjectRetentionDto> {
    const current = await this.retention.projectRetention(projectId);
    const next = { runsMs: current?.runsMs ?? null, traceMs: current?.traceMs ?? null, conversationsMs: current?.conversationsMs ?? null };
    for (const k of KINDS) if (dto[k] !== undefined) next[COLUMN[k]] = stored(dto[k] ?? null);
    return this.view(projectId, await this.retention.setProjectRetention(projectId, next));
  }

  private view(projectId: string, row: ProjectRetentionRow | undefined): ProjectRetentionDto {
    const project = {} as RetentionValuesDto;
    const deployment = {} as RetentionValuesDto;
    const effective = {} as ProjectRetentionDto['effective'];
    for (const k of KINDS) {
      const d = durationOrOff(this.config.get(ENV[k]) ?? null);
      project[k] = shown(row?.[COLUMN[k]] ?? null);
      deployment[k] = d === null ? null : formatDuration(d);
      effective[k] = project[k] ?? deployment[k] ?? 'forever';
    }
    return { projectId, project, deployment, effective, updatedAt: row?.updatedAt.toISOString() ?? null };
  }
}
