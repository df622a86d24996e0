import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { queryResult } from './query-result';

/** What a keyed tool-only execution stored of itself so far (opaque here: the orchestration reads it). */
export interface StoredProgress {
  /** the model's decision, once made */
  plan: unknown;
  /** each finished call's execution, in order */
  executions: unknown[];
  /** the call running now, or null between calls */
  running: number | null;
}

/** An abandoned execution a retry took over: its request and what it had stored (null: nothing yet). */
export interface TakenOver {
  requestId: string;
  progress: StoredProgress | null;
}

/**
 * The progress of keyed tool-only executions, on their `idempotency_keys` row: the attempt that
 * runs one (`owner`: its instance and a token) renews `heartbeat_at` while it runs and stores
 * what it did; every write names the owner, so an attempt that lost the key (a retry took it
 * over while it was stalled) changes nothing. A retry takes over an execution whose heartbeat is
 * older than the lease: one conditional UPDATE, so of retries at once, on any instances, exactly
 * one gets it.
 */
@Injectable()
export class KeyedProgressStore {
  constructor(private readonly ds: DataSource) {}

  /** Renews the owner's heartbeat; false when the key is no longer its (taken over, finished, gone). */
  async heartbeat(projectId: string, key: string, owner: string): Promise<boolean> {
    const res = await this.ds.query(
      'UPDATE idempotency_keys SET heartbeat_at = now() WHERE project_id = $1 AND key = $2 AND owner = $3 AND result IS NULL RETURNING key',
      [projectId, key, owner],
    );
    return queryResult(res).count > 0;
  }

  /** Stores the owner's progress (and renews its heartbeat); false when the key is no longer its. */
  async save(projectId: string, key: string, owner: string, progress: StoredProgress): Promise<boolean> {
    const res = await this.ds.query(
      'UPDATE idempotency_keys SET progress = $4::jsonb, heartbeat_at = now() WHERE project_id = $1 AND key = $2 AND owner = $3 AND result IS NULL RETURNING key',
      [projectId, key, owner, JSON.stringify(progress)],
    );
    return queryResult(res).count > 0;
  }

  /** Stores the result; the progress is no longer needed. False when the key is no longer the owner's. */
  async finish(projectId: string, key: string, owner: string, result: unknown): Promise<boolean> {
    const res = await this.ds.query(
      'UPDATE idempotency_keys SET result = $4::jsonb, progress = NULL WHERE project_id = $1 AND key = $2 AND owner = $3 AND result IS NULL RETURNING key',
      [projectId, key, owner, JSON.stringify(result)],
    );
    return queryResult(res).count > 0;
  }

  /** Frees the key of an execution that stored nothing to continue, so a retry starts it again. */
  async release(projectId: string, key: string, owner: string): Promise<void> {
    await this.ds.query('DELETE FROM idempotency_keys WHERE project_id = $1 AND key = $2 AND owner = $3 AND result IS NULL', [projectId, key, owner]);
  }

  /**
   * Makes `owner` the owner of the execution `fromRequestId` when its heartbeat is older than
   * `leaseMs` and it has no result; null when it is alive, finished, or another retry took it first.
   * The key's window starts again, so the continued execution's result is kept as long as a new one.
   */
  async takeOver(projectId: string, key: string, fromRequestId: string, owner: string, leaseMs: number, windowMs: number): Promise<TakenOver | null> {
    const rows = (await this.ds.query(
      `UPDATE idempotency_keys SET owner = $4, heartbeat_at = now(), expires_at = GREATEST(expires_at, now() + ($6 || ' milliseconds')::interval)
        WHERE project_id = $1 AND key = $2 AND request_id = $3 AND result IS NULL
          AND COALESCE(heartbeat_at, created_at) <= now() - ($5 || ' milliseconds')::interval
        RETURNING request_id, progress`,
      [projectId, key, fromRequestId, owner, String(leaseMs), String(windowMs)],
    )) as unknown;
    const row = queryResult(rows).rows[0] as { request_id: string; progress: StoredProgress | null } | undefined;
    return row ? { requestId: row.request_id, progress: row.progress ?? null } : null;
  }
}
