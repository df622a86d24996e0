import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import type { ToolSummary } from '../tool-registry.service';
import type { ApprovalNeed } from '../tool-definition';

/** Whether a tool's calls wait for a person (docs/API.md "Approval policy"). */
export class ToolApprovalPolicyDto {
  @ApiProperty({ description: "true: a call waits for a person's approval (before any conversation's `always`)" })
  required: boolean;

  @ApiProperty({
    description: 'why: `configured` (TOOLS_REQUIRE_APPROVAL), `project_require` / `project_exempt` (the project override), `destructive` / `not_read_only` / `mcp_default_all` (TOOLS_APPROVAL_DEFAULT), or `none`',
    example: 'destructive',
  })
  reason: string;
}

/** One tool as `GET /api/tools` lists it (docs/API.md "Tools, trace, config, health"). */
export class ToolSummaryDto {
  @ApiProperty({ example: 'read_file' })
  name: string;

  @ApiProperty({ example: 'Read a text file of the current project.' })
  description: string;

  @ApiProperty({
    description: 'JSON Schema of the arguments, as the model sees it',
    type: 'object',
    additionalProperties: true,
    example: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
  })
  parameters: Record<string, unknown>;

  @ApiProperty({ description: '"builtin" or "mcp:<server>"', example: 'builtin' })
  origin: string;

  @ApiProperty({ description: 'whether the tool can run now (e.g. web_search needs SEARXNG_URL)' })
  available: boolean;

  @ApiPropertyOptional({
    description: 'why the tool cannot run, when known: `definition changed` or `awaiting approval` (a held MCP tool), `server failed`…',
    example: 'definition changed',
  })
  unavailable?: string;

  @ApiProperty({ type: ToolApprovalPolicyDto, description: "the tool's approval policy in the project named (default `default`), its override applied" })
  approval: ToolApprovalPolicyDto;
}

export function mapToolSummary(s: ToolSummary, approval: ApprovalNeed): ToolSummaryDto {
  return {
    name: s.name, description: s.description, parameters: s.parameters, origin: s.origin, available: s.available,
    ...(s.unavailable ? { unavailable: s.unavailable } : {}),
    approval: { required: approval.required, reason: approval.reason },
  };
}
