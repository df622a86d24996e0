import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { jsonRows } from '../../database/json-rows';
import { encodeCompacted } from '../compacted-row';
import { queryResult } from '../../database/query-result';
import { ENDED_STATUSES, HELD_ANCESTORS, pastRetention } from '../../database/retention-sql';
import type { CompactedRun, RunRow } from '../compaction';

/** What deleting a batch of runs removed, per table. */
export interface RemovedRunRows {
  runs: number;
  run_events: number;
  approvals: number;
  webhook_deliveries: number;
}

/**
 * `r` (a runs row) may go: ended, past its project's RETENTION_RUNS, and nothing still needs it:
 * no live or paused fork continues from it, no webhook of it is still being delivered, no
 * Idempotency-Key within its window names it. `$d`: the deployment's retention, `$min` the smallest.
 */
export function expiredRunSql(r: string, d: string, min: string): string {
  return `${r}.status IN ${ENDED_STATUSES}
          AND ${pastRetention('runs', `${r}.updated_at`, `${r}.project_id`, d, min)}
          AND ${r}.request_id NOT IN (${HELD_ANCESTORS})
          AND NOT EXISTS (SELECT 1 FROM webhook_deliveries w WHERE w.request_id = ${r}.request_id AND w.state = 'pending')
          AND NOT EXISTS (SELECT 1 FROM idempotency_keys k WHERE k.request_id = ${r}.request_id AND k.expires_at > now())`;
}

/** For TIME_PARTITIONS: a run_events row `e` retention keeps (its run is not expired). */
export function keepRunEventSql(d: string, min: string): string {
  return `NOT EXISTS (SELECT 1 FROM runs r WHERE r.request_id = e.request_id AND ${expiredRunSql('r', d, min)})`;
}

/**
 * The storage worker's statements on runs and their rows (issue 43): compaction of ended runs'
 * chunk events, and retention's bounded batches. Each takes the worker's transaction.
 */
@Injectable()
export class RunStorageRepository {
  /**
   * Up to `limit` runs that ended at least `afterMs` ago and are not compacted yet, oldest first,
   * locked for this transaction (another worker's batch skips them).
   */
  async claimToCompact(m: EntityManager, afterMs: number, limit: number): Promise<string[]> {
    const rows = (await m.query(
      `SELECT request_id FROM runs
        WHERE compacted_at IS NULL AND status IN ${ENDED_STATUSES} AND updated_at < now() - make_interval(secs => $1::float8 / 1000)
        ORDER BY updated_at LIMIT $2 FOR NO KEY UPDATE SKIP LOCKED`,
      [afterMs, limit],
    )) as Array<{ request_id: string }>;
    return rows.map((r) => r.request_id);
  }

  /**
   * The partitions of run_events and trace_events holding rows of these runs: where compacting
   * them deletes rows (read before, as the deleted trace records' partitions are not where the
   * folded row goes).
   */
  async partitionsOf(m: EntityManager, requestIds: string[]): Promise<string[]> {
    const rows = (await m.query(
      `SELECT DISTINCT tableoid::regclass::text AS name FROM run_events WHERE request_id = ANY($1::uuid[])
       UNION SELECT DISTINCT tableoid::regclass::text FROM trace_events WHERE request_id = ANY($1::varchar[])`,
      [requestIds],
    )) as Array<{ name: string }>;
    return rows.map((r) => r.name);
  }

  /** Every row of these runs, by run, in seq order. */
  async runRows(m: EntityManager, requestIds: string[]): Promise<Map<string, RunRow[]>> {
    const rows = (await m.query(`SELECT id, request_id, seq, last_seq, type, data, created_at FROM run_events WHERE request_id = ANY($1::uuid[]) ORDER BY request_id, seq`, [requestIds])) as Array<{
      id: string | number;
      request_id: string;
      seq: number;
      last_seq: number | null;
      type: string;
      data: RunRow['data'];
      created_at: Date | string;
    }>;
    const out = new Map<string, RunRow[]>();
    for (const r of rows) {
      const list = out.get(r.request_id) ?? [];
      list.push({ id: String(r.id), seq: Number(r.seq), last_seq: r.last_seq === null ? null : Number(r.last_seq), type: r.type, data: r.data, created_at: r.created_at });
      out.set(r.request_id, list);
    }
    return out;
  }

  /**
   * Replaces each run's rows by its compacted row, and marks every run of `requestIds` compacted
   * (updated_at is left alone: retention counts from the run's end).
   */
  async storeCompacted(m: EntityManager, compacted: Map<string, CompactedRun>, requestIds: string[]): Promise<void> {
    const ids = [...compacted.keys()];
    if (ids.length > 0) {
      await m.query(`DELETE FROM run_events WHERE request_id = ANY($1::uuid[])`, [ids]);
      // one JSON string per run (src/runs/compacted-row.ts): a jsonb string cell, stored as text
      const rows = [...compacted.entries()].map(([id, c]) => [id, c.seq, c.lastSeq, c.type, encodeCompacted(c.events), c.createdAt]);
      // the compacted row keeps the time of the run's first row (the oldest-row age goes by it), and
      // run_created_at is the run's start, as the writers store it: the partition key, so the run's
      // rows stay in its partition and (request_id, seq, run_created_at) stays unique per run
      await m.query(
        `INSERT INTO run_events (request_id, seq, last_seq, type, data, created_at, run_created_at)
         SELECT (v->>0)::uuid, (v->>1)::int, (v->>2)::int, v->>3, v->4, COALESCE((v->>5)::timestamptz, now()), r.created_at
           FROM jsonb_array_elements($1::jsonb) AS v JOIN runs r ON r.request_id = (v->>0)::uuid`,
        [jsonRows(rows)],
      );
    }
    await m.query(`UPDATE runs SET compacted_at = now() WHERE request_id = ANY($1::uuid[])`, [requestIds]);
  }

  /**
   * Up to `limit` runs past retention (expiredRunSql) by `graceMs` more, oldest first, locked for
   * this transaction. The grace (two partition spans) leaves a run whose events sit in a time
   * partition to that partition's drop: deleting the run first would delete its events row by row.
   */
  async claimExpired(m: EntityManager, deploymentMs: number, minMs: number, limit: number, graceMs = 0): Promise<string[]> {
    const rows = (await m.query(
      `SELECT r.request_id FROM runs r WHERE ${expiredRunSql('r', '$1', '$2')}
          AND ${pastRetention('runs', `(r.updated_at + make_interval(secs => $4::float8 / 1000))`, 'r.project_id', '$1', '$2')}
        ORDER BY r.updated_at LIMIT $3 FOR UPDATE OF r SKIP LOCKED`,
      [deploymentMs, minMs, limit, graceMs],
    )) as Array<{ request_id: string }>;
    return rows.map((r) => r.request_id);
  }

  /** Deletes these runs with their events, approvals and webhook rows (their tries with them). */
  async deleteRuns(m: EntityManager, requestIds: string[]): Promise<RemovedRunRows> {
    if (requestIds.length === 0) return { runs: 0, run_events: 0, approvals: 0, webhook_deliveries: 0 };
    const count = async (sql: string) => queryResult(await m.query(sql, [requestIds])).count;
    const run_events = await count(`DELETE FROM run_events WHERE request_id = ANY($1::uuid[]) RETURNING 1`);
    const approvals = await count(`DELETE FROM approvals WHERE request_id = ANY($1::uuid[]) RETURNING 1`);
    const webhook_deliveries = await count(`DELETE FROM webhook_deliveries WHERE request_id = ANY($1::uuid[]) RETURNING 1`);
    const runs = await count(`DELETE FROM runs WHERE request_id = ANY($1::uuid[]) RETURNING 1`);
    return { runs, run_events, approvals, webhook_deliveries };
  }

  /** The rows of these runs' conversations' runs (for a conversation's deletion): their request ids. */
  async runsOfConversations(m: EntityManager, conversationIds: string[]): Promise<string[]> {
    const rows = (await m.query(`SELECT request_id FROM runs WHERE conversation_id = ANY($1::uuid[]) FOR UPDATE`, [conversationIds])) as Array<{ request_id: string }>;
    return rows.map((r) => r.request_id);
  }
}
