import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import type { EntityManager, Repository } from 'typeorm';
import { jsonRows, RawJson } from '../../database/json-rows';
import { preparedQuery } from '../../database/prepared-query';
import { HELD_STATUSES, pastRetention } from '../../database/retention-sql';
import { queryResult } from '../../database/query-result';
import { TraceEventEntity } from '../trace-event.entity';
import type { TraceRecord } from '../trace-sink.port';
import { stripNul } from '../../common/util/text-safety.util';
import { FOLDED_TRACE_TYPE, foldTraceRecords, withFolded } from './trace-folding';

export interface TraceQuery {
  requestId?: string;
  projectId?: string;
  types?: string[];
  limit: number;
  afterId?: number;
}

/**
 * The INSERT of trace records passed as the jsonb parameter `param` (traceRowsParam), in the
 * order given (ids, which the trace is read by, follow it). Also a CTE of the statement that
 * stores run events (RunEventRepository), so a run's trace is committed with its events.
 */
export function traceInsert(param: string): string {
  return `INSERT INTO trace_events (request_id, project_id, type, details)
  SELECT e->>0, e->>1, e->>2, e->3 FROM jsonb_array_elements(${param}::jsonb) WITH ORDINALITY AS t(e, n) ORDER BY n`;
}

/**
 * The records as traceInsert's one jsonb parameter. Their strings are made storable as they are
 * serialized (NUL and lone surrogates become U+FFFD, as in run events): a record PostgreSQL
 * refused failed the run-event statement carrying it, which was then retried without its records,
 * so the events were committed before their trace and a kill in between left a trace gap (issue 44).
 */
export function traceRowsParam(rows: readonly TraceRecord[]): string {
  return jsonRows(rows.map((r) => [r.requestId ?? null, r.projectId ?? null, r.type, new RawJson(JSON.stringify(r.details ?? {}, storable))]));
}

/** JSON.stringify's replacer: each string value storable (called after toJSON, so a Date is its ISO text already). */
function storable(_key: string, value: unknown): unknown {
  return typeof value === 'string' ? stripNul(value) : value;
}

const INSERT_MANY = traceInsert('$1');

@Injectable()
export class TraceEventRepository {
  constructor(@InjectRepository(TraceEventEntity) private readonly repo: Repository<TraceEventEntity>) {}

  async insertMany(rows: TraceRecord[]): Promise<void> {
    if (rows.length === 0) return;
    await preparedQuery(this.repo.manager.connection, INSERT_MANY, [traceRowsParam(rows)]);
  }

  /** Oldest first (insertion order); a compacted run's folded records unfolded among the others (trace-folding.ts). */
  async find(q: TraceQuery): Promise<TraceEventEntity[]> {
    const qb = this.repo.createQueryBuilder('t').orderBy('t.id', 'ASC').limit(q.limit).where('t.type <> :folded', { folded: FOLDED_TRACE_TYPE });
    if (q.requestId) qb.andWhere('t.request_id = :requestId', { requestId: q.requestId });
    if (q.projectId) qb.andWhere('t.project_id = :projectId', { projectId: q.projectId });
    if (q.types?.length) qb.andWhere('t.type IN (:...types)', { types: q.types });
    if (q.afterId) qb.andWhere('t.id > :afterId', { afterId: q.afterId });
    return withFolded(this.repo.manager, q, await qb.getMany());
  }

  /**
   * Folds these (compacted) runs' trace records into one row per run, in `m`'s transaction
   * (trace-folding.ts); how many records were folded.
   */
  fold(m: EntityManager, requestIds: string[]): Promise<number> {
    return foldTraceRecords(m, requestIds);
  }

  /** Deletes the trace events of these requests in `m`'s transaction; how many there were. */
  async deleteForRequests(m: EntityManager, requestIds: string[]): Promise<number> {
    const res: unknown = await m.query(`DELETE FROM trace_events WHERE request_id = ANY($1::varchar[]) RETURNING id`, [requestIds]);
    return queryResult(res).count;
  }

  /**
   * Deletes up to `limit` trace records past RETENTION_TRACE (expiredTraceSql) by `graceMs` more,
   * oldest first, in `m`'s transaction; how many. The grace (two partition spans) leaves rows in a
   * time partition to its drop: these deletes are for what no drop removes.
   */
  async purgeExpired(m: EntityManager, deploymentMs: number, minMs: number, limit: number, graceMs = 0): Promise<number> {
    const res: unknown = await m.query(
      `DELETE FROM trace_events WHERE id IN (SELECT e.id FROM trace_events e WHERE ${expiredTraceSql('e', '$1', '$2')}
          AND ${pastRetention('trace', `(e.created_at + make_interval(secs => $4::float8 / 1000))`, 'e.project_id', '$1', '$2')}
        ORDER BY e.created_at LIMIT $3) RETURNING 1`,
      [deploymentMs, minMs, limit, graceMs],
    );
    return queryResult(res).count;
  }
}

/**
 * `e` (a trace_events row) may go: older than its project's RETENTION_TRACE, and not a record of
 * a live or paused run. `$d`: the deployment's retention, `$min` the smallest.
 */
export function expiredTraceSql(e: string, d: string, min: string): string {
  return `${pastRetention('trace', `${e}.created_at`, `${e}.project_id`, d, min)}
          AND (${e}.request_id IS NULL OR ${e}.request_id NOT IN (SELECT l.request_id::text FROM runs l WHERE l.status IN ${HELD_STATUSES}))`;
}

/** For TIME_PARTITIONS: a trace_events row `e` retention keeps. */
export function keepTraceSql(d: string, min: string): string {
  return `NOT (${expiredTraceSql('e', d, min)})`;
}
