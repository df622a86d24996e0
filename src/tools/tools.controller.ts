import { ProjectScope } from '../common/auth/project-scope.decorator';
import { Controller, Get, Query, ValidationPipe } from '@nestjs/common';
import { ApiBadRequestResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { ToolSummaryDto, mapToolSummary } from './dto/tool-summary.dto';
import { ToolsQueryDto } from './dto/tools-query.dto';
import { ToolRegistryService } from './tool-registry.service';

@ApiTags('tools')
@Controller('api/tools')
export class ToolsController {
  constructor(private readonly registry: ToolRegistryService) {}

  /**
   * The query pipe is local as well as global: a malformed projectId must be a 400 even in a
   * test module or app that forgot the global ValidationPipe.
   */
  @Get()
  @ProjectScope('projectId')
  @ApiOperation({ operationId: 'listTools', summary: 'Registered tools (built-ins and MCP) with their schemas and whether each can run now' })
  @ApiOkResponse({ type: [ToolSummaryDto] })
  @ApiBadRequestResponse({ description: 'projectId does not match [A-Za-z0-9_-]{1,64}' })
  async list(@Query(new ValidationPipe({ transform: true })) _query: ToolsQueryDto): Promise<ToolSummaryDto[]> {
    return (await this.registry.summaries()).map(mapToolSummary);
  }
}
