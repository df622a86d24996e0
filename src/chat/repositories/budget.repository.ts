import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
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
/** The budget's counters as its current period sees them (a row not rolled over yet counts from zero). */
const SPENT = `CASE WHEN period_start >= date_trunc(period, now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' THEN spent_tokens + held_tokens ELSE 0 END AS "spentTokens",
               CASE WHEN period_start >= date_trunc(period, now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' THEN spent_cost + held_cost ELSE 0 END AS "spentCost"`;

/**
 * The counters of a budget set now (`col`: the column its runs and reservations count by; $1 its
 * id, $3 its period): the period's ended runs' stored usage, and the reservations its live turns
 * hold. Read once, when a budget is made or its period changes; from then on the runs' closing
 * statements keep them (migration 1764720000000).
 */
const recountSql = (col: 'project_id' | 'key_id'): string => `
  SELECT x.since,
         (SELECT COALESCE(sum((r.usage->>'totalTokens')::float8), 0) FROM runs r WHERE r.${col} = $1 AND r.created_at >= x.since AND r.status NOT IN ${LIVE}) AS spent_tokens,
         (SELECT COALESCE(sum((r.usage->>'cost')::float8), 0) FROM runs r WHERE r.${col} = $1 AND r.created_at >= x.since AND r.status NOT IN ${LIVE}) AS spent_cost,
         (SELECT COALESCE(sum(v.tokens::float8), 0) FROM budget_reservations v WHERE v.${col} = $1 AND v.created_at >= x.since) AS held_tokens,
         (SELECT COALESCE(sum(v.cost::float8), 0) FROM budget_reservations v WHERE v.${col} = $1 AND v.created_at >= x.since) AS held_cost
    FROM (SELECT date_trunc($3, now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS since) x`;

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

const withSpent = (r: Record<string, unknown>): BudgetRow & { spent: Spent } => ({ ...row(r), spent: { tokens: num(r.spentTokens), cost: num(r.spentCost) } });

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

  /** A budget, with what its current period has spent and holds (its counters: one row read). */
  async find(scope: BudgetScope, scopeId: string): Promise<(BudgetRow & { spent: Spent }) | null> {
    const rows = queryResult(await this.ds.query(`SELECT ${COLUMNS}, ${SPENT} FROM budgets WHERE scope = $1 AND scope_id = $2`, [scope, scopeId])).rows as Array<Record<string, unknown>>;
    return rows[0] ? withSpent(rows[0]) : null;
  }

  /** The budgets that apply to a send: its project's and its key's (one indexed read; the common case finds none). */
  async applying(projectId: string, keyId: string | null): Promise<BudgetRow[]> {
    const rows = queryResult(
      await this.ds.query(`SELECT ${COLUMNS} FROM budgets WHERE (scope = 'project' AND scope_id = $1) OR (scope = 'key' AND scope_id = $2)`, [projectId, keyId ?? '']),
    ).rows as Array<Record<string, unknown>>;
    return rows.map(row);
  }

  /**
   * Sets a budget. A new one, or one whose period changes, starts its counters from the period's
   * sums (recountSql); changing only its limits keeps them, so what the period spent still counts.
   */
  async put(b: Omit<BudgetRow, 'updatedAt'>): Promise<BudgetRow & { spent: Spent }> {
    const keep = (c: string) => `${c} = CASE WHEN budgets.period = EXCLUDED.period THEN budgets.${c} ELSE EXCLUDED.${c} END`;
    const rows = queryResult(
      await this.ds.query(
        `INSERT INTO budgets (scope, scope_id, period, tokens, cost, warn_at, period_start, spent_tokens, spent_cost, held_tokens, held_cost)
         SELECT $2, $1, $3, $4::bigint, $5::numeric, $6::float8, c.since, c.spent_tokens, c.spent_cost, c.held_tokens, c.held_cost FROM (${recountSql(b.scope === 'project' ? 'project_id' : 'key_id')}) c
         ON CONFLICT (scope, scope_id) DO UPDATE SET ${['period_start', 'spent_tokens', 'spent_cost', 'held_tokens', 'held_cost'].map(keep).join(', ')},
           period = EXCLUDED.period, tokens = EXCLUDED.tokens, cost = EXCLUDED.cost, warn_at = EXCLUDED.warn_at, updated_at = now()
         RETURNING ${COLUMNS}, ${SPENT}`,
        [b.scopeId, b.scope, b.period, b.tokens, b.cost, b.warnAt],
      ),
    ).rows as Array<Record<string, unknown>>;
    this.presence.forget(b.scope, b.scopeId);
    return withSpent(rows[0]);
  }

  async remove(scope: BudgetScope, scopeId: string): Promise<boolean> {
    const removed = queryResult(await this.ds.query(`DELETE FROM budgets WHERE scope = $1 AND scope_id = $2 RETURNING scope`, [scope, scopeId])).count > 0;
    this.presence.forget(scope, scopeId);
    return removed;
  }

  /**
   * The admission, in one round trip: orion_budget_admit (migration 1764720000000) locks the
   * send's budget rows (ordered, so two admissions never deadlock) and reads their counters; a
   * row it waited for is read as the admission before it left it (FOR UPDATE takes the newest
   * committed version), so admissions that spend the same budget take turns, on every instance.
   * It inserts the reservation and adds it to the counters only if it fits them all. `now`: the
   * periods are those holding it (UTC). Returns the locked budgets with what each had spent or
   * held before this reservation, and whether it was inserted.
   */
  async admit(projectId: string, keyId: string | null, r: Omit<Reservation, 'projectId' | 'keyId'>, now: Date): Promise<Admitted> {
    const rows = queryResult(
      await this.ds.query(`SELECT orion_budget_admit($1, $2, $3, $4, $5, $6) AS admitted`, [r.requestId, projectId, keyId ?? '', r.tokens, r.cost, now]),
    ).rows as Array<{ admitted: unknown }>;
    const raw = rows[0]?.admitted;
    const got = (typeof raw === 'string' ? JSON.parse(raw) : raw) as { inserted: boolean; budgets: Array<Record<string, unknown>> };
    return { inserted: got.inserted, budgets: got.budgets.map((x) => ({ b: row(x), spent: { tokens: num(x.spentTokens), cost: num(x.spentCost) } })) };
  }

  /** A send refused after its admission (nothing stored): its reservation goes, and with it what its budgets held for it. */
  async release(requestId: string): Promise<void> {
    await this.ds.query(`SELECT orion_budget_release($1)`, [requestId]);
  }

  /**
   * Reservations whose run was never stored, older than `olderThanMs` (ORPHAN_RESERVATION_MS), lapse (released
   * one by one, each in its own transaction, so their budget rows are locked in the order every
   * other writer locks them). Returns how many lapsed.
   */
  async lapseOrphans(limit = 100, olderThanMs = ORPHAN_RESERVATION_MS): Promise<number> {
    const rows = queryResult(
      await this.ds.query(
        `SELECT request_id FROM budget_reservations v WHERE v.created_at < now() - make_interval(secs => $1::float8 / 1000)
            AND NOT EXISTS (SELECT 1 FROM runs r WHERE r.request_id = v.request_id) LIMIT $2`,
        [olderThanMs, limit],
      ),
    ).rows as Array<{ request_id: string }>;
    for (const r of rows) await this.release(r.request_id);
    return rows.length;
  }
}
