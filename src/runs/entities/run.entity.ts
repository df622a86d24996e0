import type { ChatMode, TurnBudgets } from '../../orchestration/protocol-strategy';
import { Column, CreateDateColumn, Entity, PrimaryColumn, UpdateDateColumn } from 'typeorm';

/** `awaiting_approval`: running, and waiting for a person's decision on a tool call (issue 32) */
export type RunStatus = 'running' | 'awaiting_approval' | 'paused' | 'completed' | 'cancelled' | 'failed';
/** A control request stored on the run row and delivered by LISTEN/NOTIFY. */
export type RunControl = 'cancel' | 'pause' | null;

/** The `options` column: how the run was asked for (read back on resume). */
export interface RunOptions {
  mode?: ChatMode;
  budgets?: TurnBudgets;
  debugShowToolResults?: boolean;
  detach?: boolean;
  /** the model the turn talks to (a resume keeps it) */
  model?: string;
  /** how long a call waits for a person before it counts as denied (default APPROVAL_TIMEOUT_MS) */
  approvalTimeoutMs?: number;
  /** where the run's end is announced (issue 33); unset: the project's default URL, if any */
  webhookUrl?: string;
}

/** The `checkpoint` column: the protocol's checkpoint state per phase (the protocol parses each). */
export interface RunCheckpoints {
  schemaVersion: number;
  byPhase: Record<string, Record<string, unknown>>;
}

/** One turn of one protocol: its state, counters, checkpoint and lease. */
@Entity({ name: 'runs' })
export class RunEntity {
  @PrimaryColumn({ name: 'request_id', type: 'uuid' })
  requestId: string;

  @Column({ name: 'conversation_id', type: 'uuid' })
  conversationId: string;

  @Column({ name: 'project_id', type: 'varchar', length: 64 })
  projectId: string;

  @Column({ name: 'user_message_id', type: 'uuid', nullable: true })
  userMessageId: string | null;

  @Column({ type: 'varchar', length: 32 })
  protocol: string;

  @Column({ type: 'varchar', length: 16 })
  status: RunStatus;

  @Column({ type: 'varchar', length: 16, nullable: true })
  control: RunControl;

  @Column({ name: 'phase_index', type: 'int', default: 0 })
  phaseIndex: number;

  @Column({ name: 'cycle_index', type: 'int', default: 0 })
  cycleIndex: number;

  @Column({ name: 'last_seq', type: 'int', default: 0 })
  lastSeq: number;

  @Column({ name: 'stop_reason', type: 'varchar', length: 32, nullable: true })
  stopReason: string | null;

  @Column({ type: 'jsonb', default: () => "'{}'::jsonb" })
  options: RunOptions;

  /** the ended turn's usage and cost (issue 46); null while it runs */
  @Column({ type: 'jsonb', nullable: true })
  usage: Record<string, unknown> | null;

  @Column({ type: 'jsonb', nullable: true })
  checkpoint: RunCheckpoints | null;

  /** the run this one was forked from (a resume from an older checkpoint); null for an original run */
  @Column({ name: 'parent_request_id', type: 'uuid', nullable: true })
  parentRequestId: string | null;

  /** the parent's checkpoint (phase index) a fork continues from */
  @Column({ name: 'forked_from_phase_index', type: 'int', nullable: true })
  forkedFromPhaseIndex: number | null;

  /** how many times another instance took the run over after its instance's lease lapsed (issue 44) */
  @Column({ name: 'takeovers', type: 'int', default: 0 })
  takeovers: number;

  @Column({ name: 'lease_owner', type: 'varchar', length: 64, nullable: true })
  leaseOwner: string | null;

  /** the instance that released the lease on shutdown, until another takes the run over: a hand-over, not a death */
  @Column({ name: 'released_by', type: 'varchar', length: 64, nullable: true })
  releasedBy: string | null;

  @Column({ name: 'lease_expires_at', type: 'timestamptz', nullable: true })
  leaseExpiresAt: Date | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;
}
