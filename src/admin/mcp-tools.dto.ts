import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsOptional, Matches } from 'class-validator';

export class McpToolsQueryDto {
  @ApiPropertyOptional({ enum: ['awaiting', 'all'], default: 'awaiting', description: 'awaiting: changed and new tools held for approval; all: every pin' })
  @IsOptional() @IsIn(['awaiting', 'all'])
  view?: 'awaiting' | 'all';
}

export class ApproveMcpToolDto {
  @ApiProperty({ description: 'pendingHash of the definition reviewed: a definition that changed again since is not approved (409)', pattern: '^[0-9a-f]{64}$' })
  @Matches(/^[0-9a-f]{64}$/, { message: 'hash must be the 64 hex digits of pendingHash' })
  hash: string;
}

export class PinnedDefinitionDto {
  @ApiProperty({ nullable: true, type: String }) title: string | null;
  @ApiProperty({ nullable: true, type: String }) description: string | null;
  @ApiProperty({ type: 'object', additionalProperties: true, description: "the server's inputSchema" }) inputSchema: unknown;
  @ApiProperty({ type: 'object', additionalProperties: { type: 'boolean' }, description: 'readOnlyHint, destructiveHint, idempotentHint, openWorldHint when given' })
  annotations: Record<string, boolean>;
}

export class McpToolPinDto {
  @ApiProperty({ example: 'fx__described', description: 'registry name <server>__<tool>, as GET /api/tools lists it' }) name: string;
  @ApiProperty() server: string;
  @ApiProperty({ description: "the tool's name on its server" }) tool: string;
  @ApiProperty({ enum: ['pinned', 'approved', 'changed', 'pending'], description: 'pinned: trusted on first sight; changed/pending: held until approved' })
  status: string;
  @ApiProperty({ nullable: true, type: String, description: 'sha256 of the trusted definition (null for a new tool never approved)' }) hash: string | null;
  @ApiProperty({ nullable: true, type: PinnedDefinitionDto }) definition: PinnedDefinitionDto | null;
  @ApiProperty({ nullable: true, type: String, description: 'sha256 of the definition the server lists now, awaiting approval' }) pendingHash: string | null;
  @ApiProperty({ nullable: true, type: PinnedDefinitionDto }) pendingDefinition: PinnedDefinitionDto | null;
  @ApiProperty({ format: 'date-time' }) firstSeenAt: string;
  @ApiProperty({ nullable: true, type: String, format: 'date-time' }) changedAt: string | null;
  @ApiProperty({ nullable: true, type: String, format: 'date-time' }) approvedAt: string | null;
  @ApiProperty({ nullable: true, type: String, description: 'key name and id, or MCP_AUTO_APPROVE' }) approvedBy: string | null;
}
