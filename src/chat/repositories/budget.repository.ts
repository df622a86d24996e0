import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, EntityManager } from 'typeorm';
import { queryResult } from '../../database/query-result';
import { BudgetPresence } from '../budgets/budget-presence';

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

/** The period's sum of one budget (`col`: its runs' column; the others: parameter placeholders). */
const spentSql = (col: 'project_id' | 'key_id', id: string, since: string, orphanMs: string): string =>
  `SELECT COALESCE(sum(t), 0)::float8 AS tokens, COALESCE(sum(c), 0)::float8 AS cost FROM (
     SELECT COALESCE((r.usage->>'totalTokens')::bigint, 0) AS t, COALESCE((r.usage->>'cost')::numeric, 0) AS c
       FROM runs r WHERE r.${col} = ${id} AND r.created_at >= ${since} AND r.status NOT IN ${LIVE}
     UNION ALL
     SELECT b.tokens, b.cost FROM budget_reservations b LEFT JOIN runs r ON r.request_id = b.request_id
      WHERE b.${col} = ${id} AND b.created_at >= ${since}
        AND (r.status IN ${LIVE} OR (r.request_id IS NULL AND b.created_at > now() - make_interval(secs => ${orphanMs}::float8 / 1000)))
   ) u`;

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

/** What an admission found: the send's budgets as locked, each with what its period had spent before it, and whether its reservation went in. */
export interface Admitted {
  budgets: Array<{ b: BudgetRow; spent: Spent }>;
  inserted: boolean;
}

/** Budgets of projects and keys, and what their periods have spent (ended runs) and hold (reservations of live turns). */
@Injectable()
export class BudgetRepository {
  private readonly presence = new BudgetPresence();

  constructor(@InjectDataSource() private readonly ds: DataSource) {}

  /**
   * Whether a budget may apply to a send: from what this instance read in the last
   * BUDGET_PRESENCE_TTL_MS, else one indexed read. A yes is checked again under the lock.
   */
  async mayApply(projectId: string, keyId: string | null): Promise<boolean> {
    const project = this.presence.has('project', projectId);
    const key = keyId === null ? false : this.presence.has('key', keyId);
    if (project === true || key === true) return true;
    if (project === false && key === false) return false;
    const found = await this.applying(projectId, keyId);
    const hasProject = found.some((b) => b.scope === 'project');
    const hasKey = found.some((b) => b.scope === 'key');
    this.presence.note('project', projectId, hasProject);
    if (keyId !== null) this.presence.note('key', keyId, hasKey);
    return hasProject || hasKey;
  }

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
    this.presence.forget(b.scope, b.scopeId);
    return row(rows[0]);
  }

  async remove(scope: BudgetScope, scopeId: string): Promise<boolean> {
    const removed = queryResult(await this.ds.query(`DELETE FROM budgets WHERE scope = $1 AND scope_id = $2 RETURNING scope`, [scope, scopeId])).count > 0;
    this.presence.forget(scope, scopeId);
    return removed;
  }

  /**
   * The admission, in one round trip: orion_budget_admit (migration 1764680000000) locks the
   * send's budget rows (ordered, so two admissions never deadlock), then, in statements of its own
   * and so seeing every reservation committed before the lock was granted (READ COMMITTED takes a
   * snapshot per statement), sums what each budget's period used and inserts the reservation only
   * if it fits them all. Admissions that spend the same budget take turns, on every instance.
   * `now`: the periods are those holding it (UTC). Returns the locked budgets with what each had
   * spent before this reservation, and whether it was inserted.
   */
  async admit(projectId: string, keyId: string | null, r: Omit<Reservation, 'projectId' | 'keyId'>, now: Date): Promise<Admitted> {
    const rows = queryResult(
      await this.ds.query(`SELECT orion_budget_admit($1, $2, $3, $4, $5, $6, $7) AS admitted`, [r.requestId, projectId, keyId ?? '', r.tokens, r.cost, now, ORPHAN_RESERVATION_MS]),
    ).rows as Array<{ admitted: unknown }>;
    const raw = rows[0]?.admitted;
    const got = (typeof raw === 'string' ? JSON.parse(raw) : raw) as { inserted: boolean; budgets: Array<Record<string, unknown>> };
    return { inserted: got.inserted, budgets: got.budgets.map((x) => ({ b: row(x), spent: { tokens: num(x.spentTokens), cost: num(x.spentCost) } })) };
  }

  /**
   * What a budget's period has used since `since`: the stored usage of its ended runs, and the
   * reservations of its turns that have not ended (a live run's, or one whose run is not stored
   * yet and is younger than ORPHAN_RESERVATION_MS). A failed, cancelled or swept run's
   * reservation no longer counts: only what it stored.
   */
  async spent(scope: BudgetScope, scopeId: string, since: Date, m: EntityManager = this.ds.manager): Promise<Spent> {
    const rows = queryResult(await m.query(spentSql(scope === 'project' ? 'project_id' : 'key_id', '$1', '$2', '$3'), [scopeId, since, ORPHAN_RESERVATION_MS])).rows as Array<Record<string, unknown>>;
    return { tokens: num(rows[0]?.tokens), cost: num(rows[0]?.cost) };
  }

  /** A send refused after its admission (nothing stored): its reservation goes. */
  async release(requestId: string): Promise<void> {
    await this.ds.query(`DELETE FROM budget_reservations WHERE request_id = $1`, [requestId]);
  }
}
