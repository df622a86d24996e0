import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { queryResult } from './query-result';

/** A send's claim on its project's `Idempotency-Key`. */
export interface IdempotencyClaim {
  projectId: string;
  key: string;
  /** what the send asks for (its route and body, hashed); the same key with another is refused */
  fingerprint: string;
  /** the request the send starts when its claim wins */
  requestId: string;
  /** how long the key names this request */
  windowMs: number;
  /** a tool-only execution's attempt (its instance and a token): its heartbeat starts with the claim */
  owner?: string;
}

/** The request a key names, as the first send with it stored it. */
export interface StoredIdempotencyKey {
  fingerprint: string;
  requestId: string;
  /** a finished tool-only execution's result (chat turns are read back from their run) */
  result: unknown;
  /** how long ago the key was claimed */
  ageMs: number;
  /** how long ago its execution last said it was alive (its heartbeat; the claim when it has none) */
  idleMs: number;
}

interface Row {
  fingerprint: string;
  request_id: string;
  result: unknown;
  age_ms: string | number;
  idle_ms: string | number;
}

/**
 * `idempotency_keys`: which request a project's `Idempotency-Key` started. The primary key
 * (project, key) decides a race: of concurrent claims, on any instances, exactly one inserts;
 * the others find its row. A key past its window is claimed again as if it were new.
 */
@Injectable()
export class IdempotencyKeyStore {
  constructor(private readonly ds: DataSource) {}

  /** null when this call claimed the key (its send starts the request); else the row that holds it. */
  async claim(c: IdempotencyClaim): Promise<StoredIdempotencyKey | null> {
    for (;;) {
      const res = await this.ds.query(
        `INSERT INTO idempotency_keys (project_id, key, fingerprint, request_id, expires_at, owner, heartbeat_at)
         VALUES ($1, $2, $3, $4, now() + ($5 || ' milliseconds')::interval, $6, now())
         ON CONFLICT (project_id, key) DO UPDATE SET fingerprint = EXCLUDED.fingerprint, request_id = EXCLUDED.request_id, result = NULL,
                created_at = now(), expires_at = EXCLUDED.expires_at, owner = EXCLUDED.owner, heartbeat_at = now(), progress = NULL
          WHERE idempotency_keys.expires_at <= now()
         RETURNING request_id`,
        [c.projectId, c.key, c.fingerprint, c.requestId, String(c.windowMs), c.owner ?? null],
      );
      if (queryResult(res).count > 0) return null;
      const held = await this.find(c.projectId, c.key);
      // released (its send was refused) between the two statements: claim it again
      if (held) return held;
    }
  }

  /** The live row of a key (null when there is none, or it expired). */
  async find(projectId: string, key: string): Promise<StoredIdempotencyKey | null> {
    const rows = (await this.ds.query(
      `SELECT fingerprint, request_id, result, (EXTRACT(EPOCH FROM (now() - created_at)) * 1000)::bigint AS age_ms,
              (EXTRACT(EPOCH FROM (now() - COALESCE(heartbeat_at, created_at))) * 1000)::bigint AS idle_ms
         FROM idempotency_keys WHERE project_id = $1 AND key = $2 AND expires_at > now()`,
      [projectId, key],
    )) as Row[];
    const r = rows[0];
    return r ? { fingerprint: r.fingerprint, requestId: r.request_id, result: r.result, ageMs: Number(r.age_ms), idleMs: Number(r.idle_ms) } : null;
  }

  /**
   * Moves a key from a request that never started (its instance died before the run was stored)
   * to `c.requestId`; false when another send moved it first or it names another request now.
   */
  async takeOver(c: IdempotencyClaim, fromRequestId: string): Promise<boolean> {
    const res = await this.ds.query(
      `UPDATE idempotency_keys SET request_id = $4, fingerprint = $3, result = NULL, created_at = now(), expires_at = now() + ($5 || ' milliseconds')::interval
        WHERE project_id = $1 AND key = $2 AND request_id = $6 RETURNING request_id`,
      [c.projectId, c.key, c.fingerprint, c.requestId, String(c.windowMs), fromRequestId],
    );
    return queryResult(res).count > 0;
  }

  /** Frees a key whose send was refused before it started anything, so a retry may claim it. */
  async release(projectId: string, key: string, requestId: string): Promise<void> {
    await this.ds.query('DELETE FROM idempotency_keys WHERE project_id = $1 AND key = $2 AND request_id = $3', [projectId, key, requestId]);
  }

  /** Stores the result of the request a key names (tool-only execution). */
  async saveResult(projectId: string, key: string, requestId: string, result: unknown): Promise<void> {
    await this.ds.query('UPDATE idempotency_keys SET result = $4::jsonb WHERE project_id = $1 AND key = $2 AND request_id = $3', [projectId, key, requestId, JSON.stringify(result)]);
  }

  /** Deletes up to `limit` keys past their window; returns how many. */
  async purgeExpired(limit = 1000): Promise<number> {
    const res = await this.ds.query(
      `DELETE FROM idempotency_keys WHERE (project_id, key) IN (SELECT project_id, key FROM idempotency_keys WHERE expires_at <= now() LIMIT $1) RETURNING key`,
      [limit],
    );
    return queryResult(res).count;
  }
}
