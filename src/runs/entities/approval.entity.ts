import { Column, Entity, PrimaryColumn } from 'typeorm';

export type ApprovalStatus = 'pending' | 'approved' | 'denied' | 'expired' | 'void';

/** One tool call that waited (or waits) for a person's decision. */
@Entity({ name: 'approvals' })
export class ApprovalEntity {
  @PrimaryColumn({ type: 'uuid' })
  id: string;

  @Column({ name: 'request_id', type: 'uuid' })
  requestId: string;

  @Column({ name: 'project_id', type: 'varchar', length: 64 })
  projectId: string;

  @Column({ type: 'varchar', length: 200 })
  tool: string;

  @Column({ name: 'call_id', type: 'varchar', length: 200 })
  callId: string;

  /** as shown to users (masked) */
  @Column({ type: 'jsonb', nullable: true })
  arguments: unknown;

  /** why the call waits (the approval policy's reason) */
  @Column({ type: 'varchar', length: 64 })
  reason: string;

  @Column({ type: 'varchar', length: 16 })
  status: ApprovalStatus;

  @Column({ name: 'decision_reason', type: 'text', nullable: true })
  decisionReason: string | null;

  @Column({ name: 'edited_arguments', type: 'jsonb', nullable: true })
  editedArguments: Record<string, unknown> | null;

  @Column({ type: 'boolean', default: false })
  edited: boolean;

  /** the API key id that decided; `timeout` when it expired; null without keys or undecided */
  @Column({ name: 'decided_by', type: 'varchar', length: 64, nullable: true })
  decidedBy: string | null;

  @Column({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @Column({ name: 'expires_at', type: 'timestamptz' })
  expiresAt: Date;

  @Column({ name: 'decided_at', type: 'timestamptz', nullable: true })
  decidedAt: Date | null;
}
