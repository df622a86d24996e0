import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, EntityManager } from 'typeorm';
import { queryResult } from '../../database/query-result';

export type BudgetScope = 'project' | 'key';
export type BudgetPeriod = 'day' | 'month';

export interface BudgetRow {
  scope: BudgetScope;
  scopeId: string;
  period: BudgetPeriod;
  tokens: number | null;
  cost: number | null;
  warnAt: number | null;
  updatedAt: Date;
}

export interface Spent {
  tokens: number;
  cost: number;
}

export interface Reservation {
  requestId: string;
  projectId: string;
  keyId: string | null;
  tokens: number;
  cost: number;
}

/**
 * A reservation whose run was never stored (its send failed after admission on an instance that
 * died, or its turn still waits in its conversation's queue) counts this long, then lapses.
 */
export const ORPHAN_RESERVATION_MS = 15 * 60_000;

const LIVE = `('running', 'awaiting_approval', 'paused')`;
const COLUMNS = `scope, scope_id AS "scopeId", period, tokens::float8 AS tokens, cost::float8 AS cost, warn_at::float8 AS "warnAt", updated_at AS "updatedAt"`;

const num = (v: unknown): number => Number(v ?? 0);
const row = (r: Record<string, unknown>): BudgetRow => ({
  scope: r.scope as BudgetScope,
  scopeId: r.scopeId as string,
  period: r.period as BudgetPeriod,
  tokens: r.tokens === null ? null : num(r.tokens),
  cost: r.cost === null ? null : num(r.cost),
  warnAt: r.warnAt === null ? null : num(r.warnAt),
  updatedAt: new Date(r.updatedAt as string),
});

/** Budgets of projects and keys, and what their periods have spent (ended runs) and hold (reservations of live turns). */
@Injectable()
export class BudgetRepository {
  constructor(@InjectDataSource() private readonly ds: DataSource) {}

  async find(scope: BudgetScope, scopeId: string, m: EntityManager = this.ds.manager): Promise<BudgetRow | null> {
    const rows = queryResult(await m.query(`SELECT ${COLUMNS} FROM budgets WHERE scope = $1 AND scope_id = $2`, [scope, scopeId])).rows as Array<Record<string, unknown>>;
    return rows[0] ? row(rows[0]) : null;
  }

  /** The budgets that apply to a send: its project's and its key's (one indexed read; the common case finds none). */
  async applying(projectId: string, keyId: string | null): Promise<BudgetRow[]> {
    const rows = queryResult(
      await this.ds.query(`SELECT ${COLUMNS} FROM budgets WHERE (scope = 'project' AND scope_id = $1) OR (scope = 'key' AND scope_id = $2)`, [projectId, keyId ?? '']),
    ).rows as Array<Record<string, unknown>>;
    return rows.map(row);
  }

  async put(b: Omit<BudgetRow, 'updatedAt'>): Promise<BudgetRow> {
    const rows = queryResult(
      await this.ds.query(
        `INSERT INTO budgets (scope, scope_id, period, tokens, cost, warn_at) VALUES ($1, $2, $3, $4, $5, $6)
         ON CONFLICT (scope, scope_id) DO UPDATE SET period = EXCLUDED.period, tokens = EXCLUDED.tokens, cost = EXCLUDED.cost, warn_at = EXCLUDED.warn_at, updated_at = now()
         RETURNING ${COLUMNS}`,
        [b.scope, b.scopeId, b.period, b.tokens, b.cost, b.warnAt],
      ),
    ).rows as Array<Record<string, unknown>>;
    return row(rows[0]);
  }

  async remove(scope: BudgetScope, scopeId: string): Promise<boolean> {
    return queryResult(await this.ds.query(`DELETE FROM budgets WHERE scope = $1 AND scope_id = $2 RETURNING scope`, [scope, scopeId])).count > 0;
  }

  /**
   * Runs `fn` holding the row locks of these budgets (taken in one order, so two admissions never
   * deadlock): admissions that spend the same budget take turns, on every instance. The locked
   * rows are read again, as they are now.
   */
  locked<T>(budgets: BudgetRow[], fn: (m: EntityManager, current: BudgetRow[]) => Promise<T>): Promise<T> {
    return this.ds.transaction(async (m) => {
      const current: BudgetRow[] = [];
      for (const b of [...budgets].sort((x, y) => (x.scope + x.scopeId < y.scope + y.scopeId ? -1 : 1))) {
        const rows = queryResult(await m.query(`SELECT ${COLUMNS} FROM budgets WHERE scope = $1 AND scope_id = $2 FOR UPDATE`, [b.scope, b.scopeId])).rows as Array<Record<string, unknown>>;
        if (rows[0]) current.push(row(rows[0]));
      }
      return fn(m, current);
    });
  }

  /**
   * What a budget's period has used since `since`: the stored usage of its ended runs, and the
   * reservations of its turns that have not ended (a live run's, or one whose run is not stored
   * yet and is younger than ORPHAN_RESERVATION_MS). A failed, cancelled or swept run's
   * reservation no longer counts: only what it stored.
   */
  async spent(scope: BudgetScope, scopeId: string, since: Date, m: EntityManager = this.ds.manager): Promise<Spent> {
    const col = scope === 'project' ? 'project_id' : 'key_id';
    const rows = queryResult(
      await m.query(
        `SELECT COALESCE(sum(t), 0)::float8 AS tokens, COALESCE(sum(c), 0)::float8 AS cost FROM (
           SELECT COALESCE((r.usage->>'totalTokens')::bigint, 0) AS t, COALESCE((r.usage->>'cost')::numeric, 0) AS c
             FROM runs r WHERE r.${col} = $1 AND r.created_at >= $2 AND r.status NOT IN ${LIVE}
           UNION ALL
           SELECT b.tokens, b.cost FROM budget_reservations b LEFT JOIN runs r ON r.request_id = b.request_id
            WHERE b.${col} = $1 AND b.created_at >= $2
              AND (r.status IN ${LIVE} OR (r.request_id IS NULL AND b.created_at > now() - make_interval(secs => $3::float8 / 1000)))
         ) u`,
        [scopeId, since, ORPHAN_RESERVATION_MS],
      ),
    ).rows as Array<Record<string, unknown>>;
    return { tokens: num(rows[0]?.tokens), cost: num(rows[0]?.cost) };
  }

  async reserve(r: Reservation, m: EntityManager): Promise<void> {
    await m.query(`INSERT INTO budget_reservations (request_id, project_id, key_id, tokens, cost) VALUES ($1, $2, $3, $4, $5)`, [r.requestId, r.projectId, r.keyId, r.tokens, r.cost]);
  }

  /** A send refused after its admission (nothing stored): its reservation goes. */
  async release(requestId: string): Promise<void> {
    await this.ds.query(`DELETE FROM budget_reservations WHERE request_id = $1`, [requestId]);
  }
}
