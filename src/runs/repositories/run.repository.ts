import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import type { EntityManager, Repository } from 'typeorm';
import { RunEntity, type RunControl, type RunOptions, type RunStatus } from '../entities/run.entity';
import { storageSafe } from '../../common/util/text-safety.util';
import { queryResult } from '../../database/query-result';
import { ACTIVE_RUN_STATUSES } from '../active-run-statuses';
import { withPrelude, type StatementPrelude } from '../../database/statement-prelude';
import { announceCte } from '../../webhooks/repositories/webhook-outbox.repository';
import { endEventType } from '../../webhooks/webhook-event';

export interface NewRun {
  requestId: string;
  conversationId: string;
  projectId: string;
  userMessageId: string | null;
  protocol: string;
  options: RunOptions;
  leaseOwner: string;
  leaseMs: number;
  /** a fork: the run and checkpoint it continues from */
  fork?: { parentRequestId: string; fromPhaseIndex: number };
  /** the API key that sent the turn (budgets and the usage report by key, issue 46) */
  keyId?: string | null;
}

/**
 * Runs as their own instance and the routes see them: creation, status, counters, checkpoints,
 * control flags and the lease it holds. The runs whose lease lapsed are RunTakeoverRepository's.
 */
@Injectable()
export class RunRepository {
  constructor(@InjectRepository(RunEntity) private readonly runs: Repository<RunEntity>) {}

  /**
   * Stores a new running run leased to `r.leaseOwner` (nothing read back: callers know the run),
   * in one statement with `prelude`'s writes when given (a turn's conversation and user message),
   * in `m`'s transaction when given (a conversation's turn decided under its lock).
   */
  async create(r: NewRun, prelude?: StatementPrelude, m: EntityManager = this.runs.manager): Promise<void> {
    const params = [...(prelude?.params ?? [])];
    const $ = (v: unknown) => `$${params.push(v)}`;
    const values = [
      $(r.requestId),
      $(r.conversationId),
      $(r.projectId),
      $(r.userMessageId),
      $(r.protocol),
      `'running'`,
      `${$(JSON.stringify(r.options))}::jsonb`,
      $(r.leaseOwner),
      `now() + (${$(String(r.leaseMs))} || ' milliseconds')::interval`,
      $(r.fork?.parentRequestId ?? null),
      $(r.fork?.fromPhaseIndex ?? null),
      $(r.keyId ?? null),
    ];
    await m.query(
      `${withPrelude(prelude)}INSERT INTO runs (request_id, conversation_id, project_id, user_message_id, protocol, status, options, lease_owner, lease_expires_at,
                         parent_request_id, forked_from_phase_index, key_id)
       VALUES (${values.join(', ')})`,
      params,
    );
  }

  findById(requestId: string): Promise<RunEntity | null> {
    return this.runs.findOne({ where: { requestId } });
  }

  /** The runs forked from this one, oldest first. */
  async forksOf(requestId: string): Promise<Array<{ requestId: string; fromPhaseIndex: number }>> {
    const rows = await this.runs.find({ where: { parentRequestId: requestId }, order: { createdAt: 'ASC' }, select: { requestId: true, forkedFromPhaseIndex: true } });
    return rows.map((r) => ({ requestId: r.requestId, fromPhaseIndex: r.forkedFromPhaseIndex ?? 0 }));
  }

  /** Ends a run unless it already ended (and announces its end: its webhook, with `answer`); returns whether this call ended it. */
  async finish(requestId: string, status: 'completed' | 'cancelled' | 'failed', stopReason: string | null, lastSeq: number, answer?: string): Promise<boolean> {
    const params: unknown[] = [requestId, status, stopReason, lastSeq];
    const outbox = announceCte('outbox', 'closed', { type: endEventType(status), status, stopReason, answer, usage: null }, params);
    const res: unknown = await this.runs.query(
      `WITH closed AS (
         UPDATE runs SET status = $2, stop_reason = $3, last_seq = GREATEST(last_seq, $4), lease_owner = NULL, lease_expires_at = NULL,
                control = NULL, updated_at = now()
          WHERE request_id = $1 AND status IN ('running', 'awaiting_approval') RETURNING request_id),
       ${outbox}
       SELECT request_id FROM closed`,
      params,
    );
    return countOf(res) > 0;
  }

  /** Stores the checkpoint of a phase (merged into `checkpoint.byPhase`). */
  async saveCheckpoint(requestId: string, schemaVersion: number, phaseIndex: number, state: Record<string, unknown>, owner?: string): Promise<boolean> {
    const res: [unknown[], number] = await this.runs.query(
      `UPDATE runs SET checkpoint = jsonb_build_object(
           'schemaVersion', $2::int,
           'byPhase', COALESCE(checkpoint->'byPhase', '{}'::jsonb) || jsonb_build_object($3::text, $4::jsonb)),
         updated_at = now()
       WHERE request_id = $1 AND ($5::text IS NULL OR (lease_owner = $5 AND status IN ('running', 'awaiting_approval'))) RETURNING request_id`,
      [requestId, schemaVersion, String(phaseIndex), JSON.stringify(storageSafe(state)), owner ?? null],
    );
    return countOf(res) > 0;
  }

  /** Sets a control flag on a running run; false when the run is not running. */
  async requestControl(requestId: string, control: Exclude<RunControl, null>): Promise<boolean> {
    const res: [unknown[], number] = await this.runs.query(
      `UPDATE runs SET control = $2, updated_at = now() WHERE request_id = $1 AND status IN ('running', 'awaiting_approval') RETURNING request_id`,
      [requestId, control],
    );
    return countOf(res) > 0;
  }

  /**
   * false when `owner` no longer holds the lease (the run was swept, or ended); else the stored
   * control request, so a cancel or pause whose NOTIFY was missed (LISTEN connection down) still
   * reaches the run at its next renewal.
   */
  async renewLease(requestId: string, owner: string, leaseMs: number): Promise<false | { control: RunControl }> {
    const res: [Array<{ control: RunControl }>, number] = await this.runs.query(
      `UPDATE runs SET lease_expires_at = now() + ($3 || ' milliseconds')::interval
        WHERE request_id = $1 AND lease_owner = $2 AND status IN ('running', 'awaiting_approval') RETURNING control`,
      [requestId, owner, String(leaseMs)],
    );
    return countOf(res) > 0 ? { control: rowsOf<{ control: RunControl }>(res)[0]?.control ?? null } : false;
  }

  /**
   * Marks a run this instance holds as waiting for a person (`awaiting_approval`) or back to
   * `running`; false when `owner` no longer holds it (or it ended).
   */
  async setAwaiting(requestId: string, owner: string, awaiting: boolean): Promise<boolean> {
    const params: unknown[] = [requestId, owner, awaiting ? 'awaiting_approval' : 'running'];
    // the move from running to awaiting_approval is announced (webhook run.awaiting_approval) in
    // the same statement; a run that already waits (a second call of a unified step, a takeover) is not announced again
    const outbox = announceCte('outbox', 'started_waiting', { type: 'run.awaiting_approval', status: 'awaiting_approval', stopReason: null, answer: null, usage: null }, params);
    const res: unknown = await this.runs.query(
      `WITH moved AS (
         UPDATE runs r SET status = $3, updated_at = now() FROM (SELECT status AS was FROM runs WHERE request_id = $1) old
          WHERE r.request_id = $1 AND r.lease_owner = $2 AND r.status IN ('running', 'awaiting_approval') RETURNING r.request_id, old.was),
       started_waiting AS (SELECT request_id FROM moved WHERE was = 'running' AND $3 = 'awaiting_approval'),
       ${outbox}
       SELECT request_id FROM moved`,
      params,
    );
    return rowsOf(res).length > 0;
  }

  /**
   * Takes a paused run back to running for one resumer; false when another resume (or a
   * finished state) won the race.
   */
  async claimForResume(requestId: string, owner: string, leaseMs: number): Promise<boolean> {
    const res: [unknown[], number] = await this.runs.query(
      `UPDATE runs SET status = 'running', control = NULL, lease_owner = $2,
              lease_expires_at = now() + ($3 || ' milliseconds')::interval, updated_at = now()
        WHERE request_id = $1 AND status = 'paused' AND control IS DISTINCT FROM 'cancel' RETURNING request_id`,
      [requestId, owner, String(leaseMs)],
    );
    return countOf(res) > 0;
  }

  /**
   * Cancels a paused run whose cancel arrived while it was pausing (its `paused` closing kept the
   * flag); false when there is none, or a cancel call closed it already.
   */
  async cancelPausedIfRequested(requestId: string): Promise<boolean> {
    return this.cancelPausedWhere(requestId, `AND control = 'cancel'`);
  }

  /** Cancels a paused run (no instance runs it). */
  async cancelPaused(requestId: string): Promise<boolean> {
    return this.cancelPausedWhere(requestId, '');
  }

  /**
   * The cancel of a paused run, with its webhook written in the same statement (its answer is
   * rebuilt from the stored chunks afterwards: the event waits for it, see announceCte).
   */
  private async cancelPausedWhere(requestId: string, also: string): Promise<boolean> {
    const params: unknown[] = [requestId];
    const outbox = announceCte('outbox', 'closed', { type: 'run.cancelled', status: 'cancelled', stopReason: 'cancelled' }, params);
    const res: unknown = await this.runs.query(
      `WITH closed AS (
         UPDATE runs SET status = 'cancelled', stop_reason = 'cancelled', control = NULL, updated_at = now()
          WHERE request_id = $1 AND status = 'paused' ${also} RETURNING request_id),
       ${outbox}
       SELECT request_id FROM closed`,
      params,
    );
    return countOf(res) > 0;
  }

  /** Marks a running run paused (its stream ended with `paused`). */
  async markPaused(requestId: string, lastSeq: number): Promise<void> {
    await this.runs.query(
      `UPDATE runs SET status = 'paused', control = NULL, lease_owner = NULL, lease_expires_at = NULL,
              last_seq = GREATEST(last_seq, $2), updated_at = now()
        WHERE request_id = $1 AND status IN ('running', 'awaiting_approval')`,
      [requestId, lastSeq],
    );
  }

  /**
   * Gives up this instance's lease of a run in `status` (graceful shutdown): no owner, expired
   * now, so another instance's next sweep takes it over (a run waiting for a person, or, when
   * draining, a running run from its last checkpoint); the run keeps its status and its writes
   * from here on are fenced. `released_by` names `owner` for the taker: a hand-over, which does
   * not count against RUN_MAX_TAKEOVERS. False when `owner` no longer holds it or it left that status.
   */
  async releaseLease(requestId: string, owner: string, status: 'awaiting_approval' | 'running'): Promise<boolean> {
    const res: [unknown[], number] = await this.runs.query(
      `UPDATE runs SET lease_owner = NULL, released_by = $2, lease_expires_at = now(), updated_at = now()
        WHERE request_id = $1 AND lease_owner = $2 AND status = $3 RETURNING request_id`,
      [requestId, owner, status],
    );
    return countOf(res) > 0;
  }

  async setLastSeq(requestId: string, lastSeq: number): Promise<void> {
    await this.runs.query(`UPDATE runs SET last_seq = GREATEST(last_seq, $2) WHERE request_id = $1`, [requestId, lastSeq]);
  }

  /** The project of a run; undefined when there is no such run. */
  async projectOf(requestId: string): Promise<string | undefined> {
    const rows = (await this.runs.query('SELECT project_id FROM runs WHERE request_id = $1', [requestId])) as Array<{ project_id: string }>;
    return rows[0]?.project_id ?? undefined;
  }

  /**
   * The newest run of a conversation that has not ended (its stream is still live), for the edges
   * that reconnect by conversation rather than by run; undefined when none. A paused run's stream
   * has ended (`paused`), so it is not one.
   */
  async activeOf(conversationId: string): Promise<string | undefined> {
    const rows = (await this.runs.query(
      `SELECT request_id FROM runs WHERE conversation_id = $1 AND status NOT IN ('paused', 'completed', 'cancelled', 'failed') ORDER BY created_at DESC LIMIT 1`,
      [conversationId],
    )) as Array<{ request_id: string }>;
    return rows[0]?.request_id ?? undefined;
  }

  /**
   * The runs of a conversation, oldest first, locked in `m`'s transaction (FOR UPDATE: a cancel,
   * resume or sweep racing a deletion waits for it, then finds nothing).
   */
  lockConversationRuns(m: EntityManager, conversationId: string): Promise<Array<{ request_id: string; status: string }>> {
    return m.query(`SELECT request_id, status FROM runs WHERE conversation_id = $1 ORDER BY created_at FOR UPDATE`, [conversationId]);
  }

  /** The conversation's active turn (ACTIVE_RUN_STATUSES), oldest first, read in `m`'s transaction. */
  async activeInConversation(m: EntityManager, conversationId: string): Promise<{ requestId: string; status: RunStatus } | undefined> {
    const rows = (await m.query(`SELECT request_id, status FROM runs WHERE conversation_id = $1 AND status = ANY($2::text[]) ORDER BY created_at LIMIT 1`, [
      conversationId,
      [...ACTIVE_RUN_STATUSES],
    ])) as Array<{ request_id: string; status: RunStatus }>;
    return rows[0] ? { requestId: rows[0].request_id, status: rows[0].status } : undefined;
  }

  /** Deletes these runs in `m`'s transaction; how many there were. */
  async deleteMany(m: EntityManager, requestIds: string[]): Promise<number> {
    return queryResult(await m.query(`DELETE FROM runs WHERE request_id = ANY($1::uuid[]) RETURNING request_id`, [requestIds])).count;
  }
}

/** `UPDATE … RETURNING` through TypeORM's postgres driver yields `[rows, count]`. */
function countOf(res: unknown): number {
  if (Array.isArray(res) && res.length === 2 && typeof res[1] === 'number') return res[1];
  return Array.isArray(res) ? res.length : 0;
}

/** The returned rows of an UPDATE … RETURNING (TypeORM gives `[rows, count]` on PostgreSQL). */
function rowsOf<T>(res: unknown): T[] {
  if (Array.isArray(res) && res.length === 2 && typeof res[1] === 'number') return res[0] as T[];
  return Array.isArray(res) ? (res as T[]) : [];
}
