import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import type { EntityManager, Repository } from 'typeorm';
/**
 * The run_events statements: a run's events written under its lease (alone, fenced, grouped with
 * other runs'), read back for replay, deleted with their runs. The row layout they share is
 * run-event-rows.ts.
 */
import { type JsonCell, jsonRows, RawJson } from '../../database/json-rows';
import { preparedQuery } from '../../database/prepared-query';
import { queryResult } from '../../database/query-result';
import { RunEventEntity } from '../entities/run-event.entity';
import { announceCte } from '../../webhooks/repositories/webhook-outbox.repository';
import { traceInsert, traceRowsParam } from '../../trace/repositories/trace-event.repository';
import type { TraceRecord } from '../../trace/trace-sink.port';
import { endEventType } from '../../webhooks/webhook-event';
import { cellsOf, EVENTS_IN_ROW, PACKED_CELLS, packedRows, packRows, unpack, type StoredRow, type StoredRunEvent } from './run-event-rows';

// the event type of this repository's API, for its callers
export type { StoredRunEvent } from './run-event-rows';

/** How a run ends together with its terminal event (`done` or `paused`). */
export interface RunClosing {
  status: 'completed' | 'failed' | 'cancelled' | 'paused';
  stopReason: string | null;
  /** a run that ends (not one that pauses): its webhook event is written in the closing statement (the answer as stored, its usage) */
  announce?: { answer: string; usage: Record<string, unknown> | null };
}

/** This instance no longer holds the run's lease: the sweeper (or a resume) took it over. */
export class LeaseLostError extends Error {
  /** what a protocol waiting on the approvals port reads (ApprovalsPort.await): the run left this instance */
  readonly runLeft = true;
  constructor(readonly requestId: string) {
    super(`run ${requestId}: this instance lost its lease; nothing more is stored or sent`);
    this.name = 'LeaseLostError';
  }
}

/** One run's rows for a grouped, fenced append (see appendFencedMany). */
export interface FencedAppend {
  requestId: string;
  owner: string;
  rows: StoredRunEvent[];
}

/**
 * A run's progress (phase and cycle indices, last seq; read by GET /api/runs/:id) is stored by
 * the statement that stores its `phase` events, from those events: a separate UPDATE per phase
 * was a third of a loaded turn's commits. In a grouped append, each fenced run's last phase row.
 */
const PROGRESS_CTE = `progress AS (
         UPDATE runs r SET phase_index = (p.data->>'phaseIndex')::int, cycle_index = (p.data->>'cycleIndex')::int,
                last_seq = GREATEST(r.last_seq, p.seq), updated_at = now()
           FROM (SELECT DISTINCT ON (v.request_id) v.request_id, v.owner, v.seq, v.data FROM v WHERE v.type = 'phase'
                  ORDER BY v.request_id, v.seq DESC) p
           JOIN lease ON lease.request_id = p.request_id AND lease.lease_owner = p.owner
          WHERE r.request_id = p.request_id)`;

/** `phase_index = $i, cycle_index = $j,` for a phase row, its values pushed to `params`. */
function indicesOf(phase: StoredRunEvent, params: unknown[]): string {
  params.push(Number(phase.data.phaseIndex), Number(phase.data.cycleIndex));
  return `phase_index = $${params.length - 1}::int, cycle_index = $${params.length}::int,`;
}


/**
 * The trace records a statement of run events carries (the jsonb parameter `param`): inserted
 * whether or not the runs' leases let their events in, so a fenced run never takes another
 * run's trace with it; committed with the events, so a record made before an event was handed
 * to storage is never lost while the event is kept.
 */
function tracedCte(param: string): string {
  return `traced AS (${traceInsert(param)})`;
}

/**
 * The grouped, fenced append (appendFencedMany) around `source`, a CTE `v` of the rows to store
 * (request_id, owner, seq, last_seq, type, data): each run's rows are inserted only while its
 * owner holds its lease, and its progress is updated from its phase rows; with `traceParam`,
 * the trace records in that parameter are inserted too (without, the statement does not touch
 * trace_events, so a statement retried without its trace cannot fail on it). One text for every
 * source, so bench:statements measures the same statement around the shapes it compares.
 */
export function appendManyStatement(source: string, traceParam?: string): string {
  return `WITH ${source},${traceParam ? `\n       ${tracedCte(traceParam)},` : ''}
       lease AS (SELECT r.request_id, r.lease_owner, r.created_at FROM runs r
                  WHERE r.request_id IN (SELECT request_id FROM v) AND r.lease_owner IN (SELECT owner FROM v) AND r.status IN ('running', 'awaiting_approval')
                  ORDER BY r.request_id FOR NO KEY UPDATE OF r),
       ${PROGRESS_CTE}
       INSERT INTO run_events (request_id, seq, last_seq, type, data, run_created_at)
       SELECT v.request_id, v.seq, v.last_seq, v.type, v.data, lease.created_at FROM v JOIN lease ON lease.request_id = v.request_id AND lease.lease_owner = v.owner
       RETURNING request_id, ${EVENTS_IN_ROW} AS events`;
}

/** appendFencedMany's rows, from one jsonRows parameter */
const MANY_SOURCE = `v AS (SELECT (e->>0)::uuid AS request_id, e->>1 AS owner, (e->>2)::int AS seq, (e->>3)::int AS last_seq, e->>4 AS type, e->5 AS data
           FROM jsonb_array_elements($1::jsonb) AS e)`;
/** appendFencedMany's statements: fixed texts (prepared), without and with trace records ($2) */
const APPEND_MANY = appendManyStatement(MANY_SOURCE);
const APPEND_MANY_TRACED = appendManyStatement(MANY_SOURCE, '$2');

/** The events of each run's stream, for replay on reconnect. */
@Injectable()
export class RunEventRepository {
  constructor(@InjectRepository(RunEventEntity) private readonly events: Repository<RunEventEntity>) {}

  /**
   * One multi-row INSERT; (request_id, seq) is unique, so a double write fails loudly (the
   * unique key also holds run_created_at, the partition key, which is the run's start: one value
   * per run).
   */
  async insertMany(requestId: string, rows: StoredRunEvent[]): Promise<void> {
    if (rows.length === 0) return;
    const packed = packRows(rows);
    // only for a stored run, as the foreign key once refused others (a deleted run's events go with it: migration RunEventsCascade)
    const res = await this.events.query(
      `INSERT INTO run_events (request_id, seq, last_seq, type, data, run_created_at)
       SELECT r.request_id, ${PACKED_CELLS}, r.created_at FROM runs r, jsonb_array_elements($2::jsonb) AS e WHERE r.request_id = $1::uuid
       RETURNING seq`,
      [requestId, jsonRows(packed.map(cellsOf))],
    );
    if (queryResult(res).count !== packed.length) throw new Error(`run ${requestId} is not stored: its events were not written`);
  }

  /**
   * The executing instance's write: stored only while `owner` holds the run's lease (the row is
   * locked, so a sweeper's claim waits for this insert or this insert sees the claim). The lock is
   * FOR NO KEY UPDATE, the one the progress update needs, taken at once: a FOR SHARE lock upgraded
   * by that update deadlocks against another statement holding the same row FOR SHARE.
   * With `closing`, the run's terminal status is stored in the same statement as its terminal
   * event, so no client is ever sent an end the database does not hold. `trace`: records stored
   * by the same statement, fenced or not. Throws LeaseLostError when fenced (the statement, and
   * with it the trace records, committed).
   */
  async appendFenced(requestId: string, owner: string, rows: StoredRunEvent[], closing?: RunClosing, trace: readonly TraceRecord[] = []): Promise<void> {
    if (rows.length === 0) return;
    const packed = packRows(rows);
    const params: unknown[] = [requestId, owner, jsonRows(packed.map(cellsOf))];
    // the run's progress (a row cannot be updated twice in one statement, so the closing
    // update carries the last phase's indices itself)
    const lastPhase = rows.filter((r) => r.type === 'phase').pop();
    let update = '';
    if (closing) {
      params.push(closing.status, closing.stopReason, rows[rows.length - 1].seq);
      const n = params.length;
      // an ending run stores its usage with its status (a pause has none yet)
      const usage = closing.announce?.usage && closing.status !== 'paused' ? `usage = $${params.push(JSON.stringify(closing.announce.usage))}::jsonb, ` : '';
      // a cancel stored while the run was pausing survives the pause: the run stays paused but
      // can no longer be resumed, and RunsService finishes the cancel (a cancel is final)
      const control = closing.status === 'paused' ? `CASE WHEN runs.control = 'cancel' THEN runs.control END` : 'NULL';
      update = `, closed AS (
        UPDATE runs SET ${usage}status = $${n - 2}, stop_reason = COALESCE($${n - 1}, runs.stop_reason), last_seq = GREATEST(runs.last_seq, $${n}::int),
               ${lastPhase ? indicesOf(lastPhase, params) : ''} lease_owner = NULL, lease_expires_at = NULL, control = ${control}, updated_at = now()
          FROM lease WHERE runs.request_id = lease.request_id RETURNING runs.request_id)`;
      if (closing.announce && closing.status !== 'paused') {
        const { answer, usage } = closing.announce;
        update += `, ${announceCte('outbox', 'closed', { type: endEventType(closing.status), status: closing.status, stopReason: closing.stopReason, answer, usage }, params)}`;
      }
    } else if (lastPhase) {
      params.push(lastPhase.seq);
      const n = params.length;
      update = `, progress AS (
        UPDATE runs SET ${indicesOf(lastPhase, params)} last_seq = GREATEST(runs.last_seq, $${n}::int), updated_at = now()
          FROM lease WHERE runs.request_id = lease.request_id)`;
    }
    if (trace.length > 0) {
      params.push(traceRowsParam(trace));
      update += `, ${tracedCte(`$${params.length}`)}`;
    }
    // prepared: one of sixteen texts (not closing, closing paused or ended with or without its webhook; with a phase row or not; with trace records or not)
    const res = await preparedQuery(
      this.events.manager.connection,
      `WITH lease AS (SELECT request_id, created_at FROM runs WHERE request_id = $1 AND lease_owner = $2 AND status IN ('running', 'awaiting_approval') FOR ${closing ? 'UPDATE' : 'NO KEY UPDATE'})${update}
       INSERT INTO run_events (request_id, seq, last_seq, type, data, run_created_at)
       SELECT lease.request_id, ${PACKED_CELLS}, lease.created_at FROM lease, jsonb_array_elements($3::jsonb) AS e
       RETURNING seq`,
      params,
    );
    if (res.rowCount !== packed.length) throw new LeaseLostError(requestId);
  }

  /**
   * appendFenced for several runs in one statement (group commit): each run's rows are stored
   * only while its `owner` holds its lease (rows locked in key order, so concurrent flushes cannot
   * deadlock on each other, and FOR NO KEY UPDATE, the lock the progress update takes: a FOR SHARE
   * lock it upgraded would deadlock two flushes sharing a run). Returns how many rows were stored
   * per run; a fenced run stores none. `trace`: records stored by the same statement, every one
   * whatever the fence does to the runs' events.
   */
  async appendFencedMany(appends: FencedAppend[], trace: readonly TraceRecord[] = []): Promise<Map<string, number>> {
    const rows: JsonCell[][] = [];
    for (const a of appends) {
      for (const r of packRows(a.rows)) rows.push([a.requestId, a.owner, r.seq, r.lastSeq, r.type, new RawJson(r.json)]);
    }
    const stored = new Map<string, number>();
    if (rows.length === 0) return stored;
    const res = await preparedQuery(
      this.events.manager.connection,
      trace.length > 0 ? APPEND_MANY_TRACED : APPEND_MANY,
      trace.length > 0 ? [jsonRows(rows), traceRowsParam(trace)] : [jsonRows(rows)],
    );
    for (const row of res.rows) {
      const r = row as { request_id: unknown; events: unknown };
      const id = String(r.request_id);
      stored.set(id, (stored.get(id) ?? 0) + Number(r.events));
    }
    return stored;
  }

  /** Events with seq > afterSeq, in order (at most `limit`). */
  async listAfter(requestId: string, afterSeq: number, limit = 5000): Promise<StoredRunEvent[]> {
    // the rows from the one holding afterSeq on (a row of several chunks may hold it), found
    // through the (request_id, seq) index: a filter on last_seq alone read the whole run each time
    const rows: StoredRow[] = await this.events.query(
      `SELECT seq, last_seq, type, data FROM run_events
        WHERE request_id = $1
          AND seq >= COALESCE((SELECT seq FROM run_events WHERE request_id = $1 AND seq <= $2 ORDER BY seq DESC LIMIT 1), 0)
          AND COALESCE(last_seq, seq) > $2
        ORDER BY seq LIMIT $3`,
      [requestId, afterSeq, limit],
    );
    const out: StoredRunEvent[] = [];
    for (const r of rows) {
      for (const e of unpack(r)) {
        if (e.seq > afterSeq && out.length < limit) out.push(e);
      }
    }
    return out;
  }

  async maxSeq(requestId: string): Promise<number> {
    const [r]: Array<{ max: string | number }> = await this.events.query(`SELECT COALESCE(MAX(COALESCE(last_seq, seq)), 0) AS max FROM run_events WHERE request_id = $1`, [requestId]);
    return Number(r?.max ?? 0);
  }

  /** Deletes the events of these runs in `m`'s transaction; how many events they held (a grouped row holds several). */
  async deleteForRuns(m: EntityManager, requestIds: string[]): Promise<number> {
    const res: unknown = await m.query(`DELETE FROM run_events WHERE request_id = ANY($1::uuid[]) RETURNING ${EVENTS_IN_ROW} AS n`, [requestIds]);
    return (queryResult(res).rows as Array<{ n: number }>).reduce((sum, r) => sum + Number(r.n), 0);
  }
}
