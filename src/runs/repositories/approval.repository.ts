import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import type { Repository } from 'typeorm';
import { storageSafe } from '../../common/util/text-safety.util';
import { ApprovalEntity, type ApprovalStatus } from '../entities/approval.entity';

export interface NewApproval {
  id: string;
  requestId: string;
  projectId: string;
  tool: string;
  callId: string;
  /** as shown to users (masked) */
  arguments: unknown;
  reason: string;
  expiresInMs: number;
}

/** A decision as the route or the expiry stores it. */
export interface ApprovalDecisionRow {
  status: Extract<ApprovalStatus, 'approved' | 'denied' | 'expired'>;
  reason: string | null;
  editedArguments: Record<string, unknown> | null;
  decidedBy: string | null;
}

interface Row {
  id: string;
  request_id: string;
  project_id: string;
  tool: string;
  call_id: string;
  arguments: unknown;
  reason: string;
  status: ApprovalStatus;
  decision_reason: string | null;
  edited_arguments: Record<string, unknown> | null;
  edited: boolean;
  decided_by: string | null;
  created_at: Date | string;
  expires_at: Date | string;
  decided_at: Date | string | null;
}

/** The approvals table: every decision is one atomic `pending → …` update, so exactly one wins. */
@Injectable()
export class ApprovalRepository {
  constructor(@InjectRepository(ApprovalEntity) private readonly approvals: Repository<ApprovalEntity>) {}

  /** Stores a pending approval; false when one with this id exists already (asked again after a takeover). */
  async insert(a: NewApproval): Promise<boolean> {
    const rows = rowsOf(
      await this.approvals.query(
        `INSERT INTO approvals (id, request_id, project_id, tool, call_id, arguments, reason, status, expires_at)
         VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7, 'pending', now() + ($8 || ' milliseconds')::interval)
         ON CONFLICT (id) DO NOTHING RETURNING id`,
        [a.id, a.requestId, a.projectId, a.tool, a.callId, JSON.stringify(storageSafe(a.arguments ?? null)), a.reason, String(a.expiresInMs)],
      ),
    );
    return rows.length > 0;
  }

  async find(id: string): Promise<ApprovalEntity | null> {
    return this.approvals.findOne({ where: { id } });
  }

  /** The approvals of a run, oldest first. */
  listByRun(requestId: string): Promise<ApprovalEntity[]> {
    return this.approvals.find({ where: { requestId }, order: { createdAt: 'ASC' } });
  }

  /**
   * Decides a pending approval that has not expired (by the database's clock); null when it was
   * no longer pending (another decision, the expiry or a void won) or its time is up.
   */
  async decide(id: string, d: ApprovalDecisionRow): Promise<ApprovalEntity | null> {
    const rows = rowsOf<Row>(
      await this.approvals.query(
        `UPDATE approvals SET status = $2, decision_reason = $3, edited_arguments = $4::jsonb, edited = $4::jsonb IS NOT NULL,
                decided_by = $5, decided_at = now()
          WHERE id = $1 AND status = 'pending' AND expires_at > now() RETURNING *`,
        [id, d.status, d.reason, d.editedArguments === null ? null : JSON.stringify(storageSafe(d.editedArguments)), d.decidedBy],
      ),
    );
    return rows[0] ? toEntity(rows[0]) : null;
  }

  /** Expires a pending approval whose time is up (by the database's clock); null when it was not. */
  async expireIfDue(id: string): Promise<ApprovalEntity | null> {
    const rows = rowsOf<Row>(
      await this.approvals.query(
        `UPDATE approvals SET status = 'expired', decision_reason = 'timeout', decided_by = 'timeout', decided_at = now()
          WHERE id = $1 AND status = 'pending' AND expires_at <= now() RETURNING *`,
        [id],
      ),
    );
    return rows[0] ? toEntity(rows[0]) : null;
  }

  /** Voids a pending approval (its run was cancelled or paused); false when it was decided first. */
  async voidPending(id: string, why: string): Promise<boolean> {
    const rows = rowsOf(
      await this.approvals.query(`UPDATE approvals SET status = 'void', decision_reason = $2, decided_at = now() WHERE id = $1 AND status = 'pending' RETURNING id`, [
        id,
        why,
      ]),
    );
    return rows.length > 0;
  }

  /** Voids every pending approval of a run (closed by the sweeper, or cancelled while nobody ran it). */
  async voidPendingOfRun(requestId: string, why: string): Promise<number> {
    const rows = rowsOf(
      await this.approvals.query(
        `UPDATE approvals SET status = 'void', decision_reason = $2, decided_at = now() WHERE request_id = $1 AND status = 'pending' RETURNING id`,
        [requestId, why],
      ),
    );
    return rows.length;
  }
}

function toEntity(r: Row): ApprovalEntity {
  const date = (v: Date | string) => (v instanceof Date ? v : new Date(v));
  return Object.assign(new ApprovalEntity(), {
    id: r.id,
    requestId: r.request_id,
    projectId: r.project_id,
    tool: r.tool,
    callId: r.call_id,
    arguments: r.arguments,
    reason: r.reason,
    status: r.status,
    decisionReason: r.decision_reason,
    editedArguments: r.edited_arguments,
    edited: r.edited,
    decidedBy: r.decided_by,
    createdAt: date(r.created_at),
    expiresAt: date(r.expires_at),
    decidedAt: r.decided_at === null ? null : date(r.decided_at),
  });
}

/** The returned rows of a statement with RETURNING (TypeORM gives `[rows, count]` for UPDATE on PostgreSQL). */
function rowsOf<T = unknown>(res: unknown): T[] {
  if (Array.isArray(res) && res.length === 2 && typeof res[1] === 'number' && Array.isArray(res[0])) return res[0] as T[];
  return Array.isArray(res) ? (res as T[]) : [];
}
