/**
 * The runs whose lease lapsed (their instance died, or let them go on shutdown): each is either
 * closed as failed (`claimExpired`, its webhook in the same statement) or continued by another
 * instance (`claimForTakeover`; `failTakenOver` when that instance cannot after all), claimed by
 * exactly one instance (SKIP LOCKED) under one predicate (`continuable`), so no run is both.
 * The sweeper's statements, apart from RunRepository's, which a run's own instance uses while it
 * holds the lease.
 */
import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { In, type Repository } from 'typeorm';
import { queryResult } from '../../database/query-result';
import { announceCte } from '../../webhooks/repositories/webhook-outbox.repository';
import { RunEntity } from '../entities/run.entity';

@Injectable()
export class RunTakeoverRepository {
  constructor(@InjectRepository(RunEntity) private readonly runs: Repository<RunEntity>) {}

  /**
   * Takes running runs whose lease expired (their instance died) and marks them failed, each
   * claimed by exactly one instance (SKIP LOCKED). Returns what is needed to close them, with why
   * they could not be continued. Their webhooks are written in the same statement (held until the
   * sweeper rebuilt their answers). The runs `claimForTakeover` continues are left to it
   * (`continuable`: the same predicate, so no run is both closed and continued).
   */
  async claimExpired(limit = 20, takeover: string[] = [], maxTakeovers = 0): Promise<ExpiredRun[]> {
    const params: unknown[] = [limit, takeover, maxTakeovers];
    const outbox = announceCte('outbox', 'closed', { type: 'run.failed', status: 'failed', stopReason: 'error' }, params);
    const res: unknown = await this.runs.query(
      `WITH closed AS (
         UPDATE runs r SET status = 'failed', stop_reason = 'error', control = NULL, lease_owner = NULL, lease_expires_at = NULL, updated_at = now()
           FROM (SELECT request_id, status AS was FROM runs WHERE status IN ('running', 'awaiting_approval') AND lease_expires_at < now()
                    AND NOT ${continuable('$2', '$3')}
                  ORDER BY lease_expires_at LIMIT $1 FOR UPDATE SKIP LOCKED) old
          WHERE r.request_id = old.request_id
          RETURNING r.request_id, r.conversation_id, r.project_id, r.protocol, r.takeovers, old.was, ${HAS_CHECKPOINT} AS has_checkpoint),
       ${outbox}
       SELECT request_id, conversation_id, project_id, protocol, takeovers, has_checkpoint, was FROM closed`,
      params,
    );
    type Row = { request_id: string; conversation_id: string; project_id: string; protocol: string; takeovers: number; has_checkpoint: boolean; was: string };
    return (queryResult(res).rows as Row[]).map((r) => ({
      requestId: r.request_id,
      conversationId: r.conversation_id,
      projectId: r.project_id,
      reason: !takeover.includes(r.protocol) ? 'protocol_cannot_continue' : !r.has_checkpoint ? 'no_checkpoint' : 'takeovers_exhausted',
    }));
  }

  /**
   * Takes over runs of `protocols` whose lease expired (their instance died): each is leased to
   * `owner` by exactly one instance (SKIP LOCKED, and the lease moves to `owner`, so the old
   * instance, if it was only slow, loses its fence and stores nothing more). A run that waits for
   * a person stays `awaiting_approval`, its approvals open to decisions while it is continued here;
   * a running one is taken when it has a checkpoint to continue from and was taken over fewer than
   * `maxTakeovers` times (issue 44). `takeovers` counts both, but not a hand-over: a run an
   * instance released on shutdown (`released_by`, named as `fromInstance`) is continued however
   * often it was handed over, since each hand-over is a deploy's, not a failure's.
   */
  async claimForTakeover(owner: string, leaseMs: number, protocols: string[], limit = 20, maxTakeovers = 0): Promise<Array<{ run: RunEntity; fromInstance: string | null; handedOver: boolean }>> {
    if (protocols.length === 0) return [];
    const res: unknown = await this.runs.query(
      `UPDATE runs r SET lease_owner = $1, lease_expires_at = now() + ($2 || ' milliseconds')::interval, released_by = NULL,
              takeovers = r.takeovers + CASE WHEN old.released IS NULL THEN 1 ELSE 0 END, updated_at = now()
         FROM (SELECT request_id, lease_owner AS was, released_by AS released FROM runs
                WHERE status IN ('running', 'awaiting_approval') AND lease_expires_at < now() AND ${continuable('$3', '$5')}
                ORDER BY lease_expires_at LIMIT $4 FOR UPDATE SKIP LOCKED) old
        WHERE r.request_id = old.request_id
        RETURNING r.request_id, old.was, old.released`,
      [owner, String(leaseMs), protocols, limit, maxTakeovers],
    );
    type Row = { request_id: string; was: string | null; released: string | null };
    const from = new Map((queryResult(res).rows as Row[]).map((r) => [r.request_id, r]));
    if (from.size === 0) return [];
    const runs = await this.runs.find({ where: { requestId: In([...from.keys()]) } });
    return runs.map((run) => {
      const row = from.get(run.requestId)!;
      return { run, fromInstance: row.was ?? row.released, handedOver: row.released !== null };
    });
  }

  /** Closes as failed a run `owner` took over but could not continue; false when it no longer holds it. */
  async failTakenOver(requestId: string, owner: string): Promise<boolean> {
    const params: unknown[] = [requestId, owner];
    // announced like any run the sweeper closes (held until its answer is rebuilt)
    const outbox = announceCte('outbox', 'closed', { type: 'run.failed', status: 'failed', stopReason: 'error' }, params);
    const res: unknown = await this.runs.query(
      `WITH closed AS (
         UPDATE runs SET status = 'failed', stop_reason = 'error', control = NULL, lease_owner = NULL, lease_expires_at = NULL, updated_at = now()
          WHERE request_id = $1 AND lease_owner = $2 AND status IN ('running', 'awaiting_approval') RETURNING request_id),
       ${outbox}
       SELECT request_id FROM closed`,
      params,
    );
    return queryResult(res).rows.length > 0;
  }


  /** Whether the run waits for a person and its instance's lease ran out (nobody continues it until a sweep). */
  async awaitsTakeover(requestId: string): Promise<boolean> {
    const rows = (await this.runs.query(`SELECT 1 FROM runs WHERE request_id = $1 AND status = 'awaiting_approval' AND lease_expires_at < now()`, [requestId])) as unknown[];
    return rows.length > 0;
  }
}

/** A run whose instance died and that is closed rather than continued, and why. */
export interface ExpiredRun {
  requestId: string;
  conversationId: string;
  projectId: string;
  reason: 'protocol_cannot_continue' | 'no_checkpoint' | 'takeovers_exhausted';
}

const HAS_CHECKPOINT = `COALESCE(checkpoint->'byPhase', '{}'::jsonb) <> '{}'::jsonb`;

/**
 * The lapsed runs another instance continues: of a protocol in `protocols` (a text[] parameter),
 * waiting for a person, or running with a checkpoint and fewer than `max` takeovers so far (or
 * released on shutdown: a hand-over is continued whatever the count).
 */
function continuable(protocols: string, max: string): string {
  return `(protocol = ANY(${protocols}::text[]) AND (status = 'awaiting_approval' OR (status = 'running' AND (takeovers < ${max}::int OR released_by IS NOT NULL) AND ${HAS_CHECKPOINT})))`;
}
