import { BadRequestException, Controller, Get, Param, Query } from '@nestjs/common';
import { ApiBadRequestResponse, ApiForbiddenResponse, ApiOkResponse, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import { AdminOnly } from '../common/auth/admin-only.decorator';
import { periodStart } from '../chat/budgets/budget-period';
import { UsageReportRepository } from '../chat/repositories/usage-report.repository';
import { WebhookProjectParamDto } from '../webhooks/dto/webhook.dto';
import { UsageQueryDto, UsageReportDto } from './budgets.dto';

/** What a project's turns used and cost (issue 46; docs/API.md, "Budgets and usage"). */
@ApiTags('admin')
@AdminOnly()
@ApiForbiddenResponse({ description: 'the key is not an admin key for every project' })
@ApiParam({ name: 'projectId', description: 'the project' })
@Controller('api/admin/projects/:projectId/usage')
export class UsageReportController {
  constructor(private readonly usage: UsageReportRepository) {}

  @Get()
  @ApiOperation({ operationId: 'getProjectUsage', summary: "Tokens, cost and turns of the project's ended runs started in [from, to), in total and per day, model or key" })
  @ApiOkResponse({ type: UsageReportDto })
  @ApiBadRequestResponse({ description: 'invalid projectId, from or to not a date-time, from not before to, or groupBy not day, model or key' })
  async get(@Param() { projectId }: WebhookProjectParamDto, @Query() q: UsageQueryDto): Promise<UsageReportDto> {
    const now = new Date();
    const from = q.from ? new Date(q.from) : periodStart('month', now);
    const to = q.to ? new Date(q.to) : now;
    if (!(from < to)) throw new BadRequestException('from must be before to');
    const totals = (await this.usage.sum(projectId, from, to))[0] ?? { tokens: 0, cost: 0, turns: 0 };
    const groups = q.groupBy ? await this.usage.sum(projectId, from, to, q.groupBy) : [];
    return { projectId, from: from.toISOString(), to: to.toISOString(), groupBy: q.groupBy ?? null, totals: { tokens: totals.tokens, cost: totals.cost, turns: totals.turns }, groups };
  }
}
