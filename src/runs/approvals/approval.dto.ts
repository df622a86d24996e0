import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsObject, IsOptional, IsString, MaxLength } from 'class-validator';
import type { ApprovalEntity } from '../entities/approval.entity';

/** Body of POST /api/chat/runs/:requestId/approvals/:approvalId. */
export class DecideApprovalDto {
  @ApiProperty({ enum: ['approve', 'deny'], example: 'approve' })
  @IsIn(['approve', 'deny'], { message: 'decision must be "approve" or "deny"' })
  decision: 'approve' | 'deny';

  @ApiPropertyOptional({ maxLength: 2000, example: 'not this file', description: 'why; a denial\'s reason is what the model reads' })
  @IsOptional() @IsString({ message: 'reason must be a string' }) @MaxLength(2000)
  reason?: string;

  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: true,
    example: { path: 'docs/roadmap.md' },
    description: 'approve only: arguments edited by a person, checked against the tool\'s schema and secret policy as a model\'s call is (refused: 400, nothing changed)',
  })
  @IsOptional() @IsObject({ message: 'arguments must be a JSON object' })
  arguments?: Record<string, unknown>;
}

/** An approval as stored: what was asked, and what was decided. */
export class ApprovalDto {
  @ApiProperty({ format: 'uuid' }) approvalId: string;
  @ApiProperty({ format: 'uuid' }) requestId: string;
  @ApiProperty({ example: 'read_file' }) tool: string;
  @ApiProperty() callId: string;
  @ApiProperty({ description: 'the model\'s arguments as shown to users (secrets masked)', example: { path: 'docs/roadmap.md' } }) arguments: unknown;
  @ApiProperty({ description: 'why the call waits: configured, conversation_always, destructive, not_read_only, mcp_default_all', example: 'configured' }) reason: string;
  @ApiProperty({ enum: ['pending', 'approved', 'denied', 'expired', 'void'] }) status: string;
  @ApiProperty({ enum: ['approve', 'deny'], nullable: true, type: String, description: 'expired counts as deny' }) decision: 'approve' | 'deny' | null;
  @ApiProperty({ nullable: true, type: String, description: 'the decider\'s reason; `timeout` when it expired; `cancelled` / `paused` when void' })
  decisionReason: string | null;
  @ApiProperty({ description: 'approved with arguments a person edited' }) edited: boolean;
  @ApiProperty({ nullable: true, type: 'object', additionalProperties: true, description: 'the edited arguments, when edited' }) editedArguments: Record<string, unknown> | null;
  @ApiProperty({ nullable: true, type: String, description: 'who decided: the API key id (null without keys); `timeout` when it expired' }) by: string | null;
  @ApiProperty() createdAt: string;
  @ApiProperty() expiresAt: string;
  @ApiProperty({ nullable: true, type: String }) decidedAt: string | null;
}

export function mapApproval(a: ApprovalEntity): ApprovalDto {
  return {
    approvalId: a.id,
    requestId: a.requestId,
    tool: a.tool,
    callId: a.callId,
    arguments: a.arguments,
    reason: a.reason,
    status: a.status,
    decision: a.status === 'approved' ? 'approve' : a.status === 'denied' || a.status === 'expired' ? 'deny' : null,
    decisionReason: a.decisionReason,
    edited: a.edited,
    editedArguments: a.editedArguments,
    by: a.decidedBy,
    createdAt: a.createdAt.toISOString(),
    expiresAt: a.expiresAt.toISOString(),
    decidedAt: a.decidedAt?.toISOString() ?? null,
  };
}
