import { ProjectScope } from '../common/auth/project-scope.decorator';
import { Controller, Get, Query } from '@nestjs/common';
import { FieldValidationPipe } from '../common/errors/field-errors';
import { ApiBadRequestResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { ToolSummaryDto, mapToolSummary } from './dto/tool-summary.dto';
import { ToolsQueryDto } from './dto/tools-query.dto';
import { ToolRegistryService } from './tool-registry.service';
import { ToolRunnerService } from './tool-runner.service';

@ApiTags('tools')
@Controller('api/tools')
export class ToolsController {
  constructor(
    private readonly registry: ToolRegistryService,
    private readonly runner: ToolRunnerService,
  ) {}

  /**
   * The query pipe is local as well as global: a malformed projectId must be a 400 even in a
   * test module or app that forgot the global ValidationPipe.
   */
  @Get()
  @ProjectScope('projectId')
  @ApiOperation({ operationId: 'listTools', summary: "Registered tools (built-ins and MCP) with their schemas, whether each can run now and whether its calls wait for a person's approval in the project" })
  @ApiOkResponse({ type: [ToolSummaryDto] })
  @ApiBadRequestResponse({ description: 'projectId does not match [A-Za-z0-9_-]{1,64}' })
  async list(@Query(new FieldValidationPipe()) query: ToolsQueryDto): Promise<ToolSummaryDto[]> {
    // the project the route is scoped to (absent = `default`, as ProjectScope reads it): its override applies
    const projectId = query.projectId ?? 'default';
    const summaries = await this.registry.summaries();
    return Promise.all(
      summaries.map(async (s) => {
        const def = this.registry.get(s.name);
        const approval = def ? await this.runner.approvalPolicyOf(def, projectId) : { required: false, reason: 'unknown_tool' };
        return mapToolSummary(s, approval);
      }),
    );
  }
}
