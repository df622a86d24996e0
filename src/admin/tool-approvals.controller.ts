import { BadRequestException, Body, Controller, Get, Param, Put, Req } from '@nestjs/common';
import { ApiBadRequestResponse, ApiForbiddenResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Request } from 'express';
import { AdminOnly } from '../common/auth/admin-only.decorator';
import { principalOf } from '../common/auth/principal';
import { ApprovalOverridesService } from '../tools/approval/approval-overrides.service';
import type { ApprovalOverrideRow } from '../tools/approval/repositories/approval-override.repository';
import { ProjectIdParamDto, PutToolApprovalsDto, ToolApprovalsDto } from './tool-approvals.dto';

/**
 * A project's override of which tool calls wait for a person (docs/API.md "Approval policy").
 * It loosens as well as tightens what the configuration says, so only an admin key for every
 * project may set it (no @ProjectScope: the guard then refuses a project-bound key).
 */
@ApiTags('admin')
@AdminOnly()
@ApiForbiddenResponse({ description: 'the key is not an admin key for every project' })
@Controller('api/admin/projects/:projectId/tool-approvals')
export class ToolApprovalsController {
  constructor(private readonly overrides: ApprovalOverridesService) {}

  @Get()
  @ApiOperation({ operationId: 'getToolApprovals', summary: "The project's approval override (empty lists and updatedAt null when it has none)" })
  @ApiOkResponse({ type: ToolApprovalsDto })
  @ApiBadRequestResponse({ description: 'projectId does not match [A-Za-z0-9_-]{1,64}' })
  async get(@Param() p: ProjectIdParamDto): Promise<ToolApprovalsDto> {
    return view(p.projectId, await this.overrides.get(p.projectId));
  }

  @Put()
  @ApiOperation({ operationId: 'putToolApprovals', summary: "Replaces the project's approval override; every instance applies it to the next call" })
  @ApiOkResponse({ type: ToolApprovalsDto })
  @ApiBadRequestResponse({ description: 'a list missing or not of names/globs, more than 200 entries, or one name both required and exempt; nothing is changed' })
  async put(@Param() p: ProjectIdParamDto, @Body() dto: PutToolApprovalsDto, @Req() req: Request): Promise<ToolApprovalsDto> {
    const both = dto.require.filter((n) => dto.exempt.includes(n));
    if (both.length) throw new BadRequestException(`a pattern cannot be both required and exempt: ${[...new Set(both)].join(', ')}`);
    const who = principalOf(req);
    const row = await this.overrides.set(p.projectId, [...new Set(dto.require)], [...new Set(dto.exempt)], `${who.name} (${who.keyId})`);
    return view(p.projectId, row);
  }
}

function view(projectId: string, row: ApprovalOverrideRow | null): ToolApprovalsDto {
  return {
    projectId,
    require: row?.require ?? [],
    exempt: row?.exempt ?? [],
    updatedAt: row ? new Date(row.updatedAt).toISOString() : null,
    updatedBy: row?.updatedBy ?? null,
  };
}
