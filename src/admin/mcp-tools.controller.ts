import { Body, ConflictException, Controller, Get, HttpCode, NotFoundException, Param, Post, Query, Req } from '@nestjs/common';
import { ApiConflictResponse, ApiForbiddenResponse, ApiNotFoundResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Request } from 'express';
import { AdminOnly } from '../common/auth/admin-only.decorator';
import { principalOf } from '../common/auth/principal';
import { McpToolPinsService, PinConflict } from '../tools/mcp/mcp-tool-pins.service';
import { ApproveMcpToolDto, McpToolPinDto, McpToolsQueryDto } from './mcp-tools.dto';

/**
 * Approvals of pinned MCP tool definitions. MCP servers serve the whole deployment, so an
 * approval holds for every project: only an admin key for every project may give it.
 */
@ApiTags('admin')
@AdminOnly()
@ApiForbiddenResponse({ description: 'the key is not an admin key for every project' })
@Controller('api/admin/mcp-tools')
export class McpToolsController {
  constructor(private readonly pins: McpToolPinsService) {}

  @Get()
  @ApiOperation({ operationId: 'listMcpToolPins', summary: 'MCP tools held for approval (changed or new), with the trusted and the proposed definition' })
  @ApiOkResponse({ type: [McpToolPinDto] })
  list(@Query() q: McpToolsQueryDto): Promise<McpToolPinDto[]> {
    return this.pins.list(q.view === 'all');
  }

  @Post(':name/approve')
  @HttpCode(200)
  @ApiOperation({ operationId: 'approveMcpTool', summary: 'Trust the definition awaiting approval (named by its hash); the tool is offered again at once' })
  @ApiOkResponse({ type: McpToolPinDto })
  @ApiNotFoundResponse({ description: 'no MCP tool of that name was ever listed' })
  @ApiConflictResponse({ description: 'nothing awaits approval, or the awaiting definition has another hash' })
  async approve(@Param('name') name: string, @Body() dto: ApproveMcpToolDto, @Req() req: Request): Promise<McpToolPinDto> {
    const p = principalOf(req);
    try {
      const pin = await this.pins.approve(name, dto.hash, `${p.name} (${p.keyId})`);
      if (!pin) throw new NotFoundException(`No MCP tool ${name}`);
      return pin;
    } catch (err) {
      if (err instanceof PinConflict) throw new ConflictException(err.message);
      throw err;
    }
  }
}
