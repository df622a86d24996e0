import type { MigrationInterface, QueryRunner } from 'typeorm';
import { BudgetAdmit1764680000000 } from './1764680000000-budget-admit';

/** The start of row `b`'s current period at `at`, never before the period it already counts (clocks of instances differ a little). */
const current = (b: string, at: string) => `GREATEST(${b}.period_start, date_trunc(${b}.period, ${at} AT TIME ZONE 'UTC') AT TIME ZONE 'UTC')`;

/**
 * Issue 46, deliver 5: the admission reads one row. Each budget keeps running counters for its
 * current period: `spent_*` (what the period's ended runs used) and `held_*` (the reservations of
 * its live turns). The admission locks the budget rows and reads them (FOR UPDATE returns the
 * newest committed version of a row it waited for, so it sees what the admission before it held),
 * instead of summing the period's runs. Counters roll over lazily: a row whose `period_start` is
 * before the current period counts from zero. A reservation now lives only while its turn does:
 * the run's closing statement deletes it and adds the run's usage (the trigger below, so every
 * path that ends a run settles it: a turn's end, a cancel of a paused run, the sweeper).
 * docs/OPERATIONS.md, "Budgets".
 */
export class BudgetCounters1764720000000 implements MigrationInterface {
  name = 'BudgetCounters1764720000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE budgets ADD COLUMN period_start timestamptz NOT NULL DEFAULT '-infinity',
      ADD COLUMN spent_tokens float8 NOT NULL DEFAULT 0, ADD COLUMN spent_cost float8 NOT NULL DEFAULT 0,
      ADD COLUMN held_tokens float8 NOT NULL DEFAULT 0, ADD COLUMN held_cost float8 NOT NULL DEFAULT 0`);

    // A spend and/or a release on one budget: each counts only in the period it started in (a run
    // by its start, as the usage report counts it; a reservation by when it was made).
    await q.query(`CREATE FUNCTION orion_budget_count(p_scope text, p_id text, p_spent_at timestamptz, p_tokens float8, p_cost float8,
                                                     p_held_at timestamptz, p_held_tokens float8, p_held_cost float8)
      RETURNS void LANGUAGE plpgsql VOLATILE AS $$
      BEGIN
        UPDATE budgets b SET
          spent_tokens = CASE WHEN b.period_start < x.cur THEN 0 ELSE b.spent_tokens END + CASE WHEN p_spent_at >= x.cur THEN p_tokens ELSE 0 END,
          spent_cost = CASE WHEN b.period_start < x.cur THEN 0 ELSE b.spent_cost END + CASE WHEN p_spent_at >= x.cur THEN p_cost ELSE 0 END,
          held_tokens = GREATEST(0, CASE WHEN b.period_start < x.cur THEN 0 ELSE b.held_tokens END - CASE WHEN p_held_at >= x.cur THEN p_held_tokens ELSE 0 END),
          held_cost = GREATEST(0, CASE WHEN b.period_start < x.cur THEN 0 ELSE b.held_cost END - CASE WHEN p_held_at >= x.cur THEN p_held_cost ELSE 0 END),
          period_start = x.cur
        FROM (SELECT scope, scope_id, ${current('o', 'now()')} AS cur FROM budgets o WHERE o.scope = p_scope AND o.scope_id = p_id) x
        WHERE b.scope = x.scope AND b.scope_id = x.scope_id;
      END $$`);

    // Where a run ends: its reservation goes, its usage counts. A run that ended without stored
    // usage (its instance died mid-call, the event store failed, a paused run was cancelled) counts
    // its whole reservation: what it spent is unknown, and at most that. Keys before projects: the
    // admission's lock order, so the two never deadlock.
    await q.query(`CREATE FUNCTION orion_budget_settle() RETURNS trigger LANGUAGE plpgsql VOLATILE AS $$
      DECLARE h_tokens float8; h_cost float8; h_at timestamptz; t float8; c float8;
      BEGIN
        DELETE FROM budget_reservations WHERE request_id = NEW.request_id RETURNING tokens::float8, cost::float8, created_at INTO h_tokens, h_cost, h_at;
        IF NEW.usage IS NULL THEN t := COALESCE(h_tokens, 0); c := COALESCE(h_cost, 0);
        ELSE t := COALESCE((NEW.usage->>'totalTokens')::float8, 0); c := COALESCE((NEW.usage->>'cost')::float8, 0);
        END IF;
        IF NEW.key_id IS NOT NULL THEN PERFORM orion_budget_count('key', NEW.key_id, NEW.created_at, t, c, h_at, h_tokens, h_cost); END IF;
        PERFORM orion_budget_count('project', NEW.project_id, NEW.created_at, t, c, h_at, h_tokens, h_cost);
        RETURN NULL;
      END $$`);
    await q.query(`CREATE TRIGGER runs_budget_settle AFTER UPDATE OF status ON runs FOR EACH ROW
      WHEN (OLD.status IN ('running', 'awaiting_approval', 'paused') AND NEW.status NOT IN ('running', 'awaiting_approval', 'paused'))
      EXECUTE FUNCTION orion_budget_settle()`);

    // A send refused after its admission, or a reservation whose run was never stored (lapsed): it no longer holds anything.
    await q.query(`CREATE FUNCTION orion_budget_release(p_request uuid) RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
      DECLARE k text; p text; h_tokens float8; h_cost float8; h_at timestamptz;
      BEGIN
        DELETE FROM budget_reservations WHERE request_id = p_request RETURNING key_id, project_id, tokens::float8, cost::float8, created_at INTO k, p, h_tokens, h_cost, h_at;
        IF p IS NULL THEN RETURN false; END IF;
        IF k IS NOT NULL THEN PERFORM orion_budget_count('key', k, NULL, 0, 0, h_at, h_tokens, h_cost); END IF;
        PERFORM orion_budget_count('project', p, NULL, 0, 0, h_at, h_tokens, h_cost);
        RETURN true;
      END $$`);

    // The admission: one round trip, one row read per budget (its project's and its key's).
    await q.query('DROP FUNCTION orion_budget_admit(uuid, text, text, float8, float8, timestamptz, float8)');
    await q.query(`CREATE FUNCTION orion_budget_admit(p_request uuid, p_project text, p_key text, p_tokens float8, p_cost float8, p_now timestamptz)
      RETURNS jsonb LANGUAGE plpgsql VOLATILE AS $$
      DECLARE
        bu record; s_tokens float8; s_cost float8; fits boolean := true; found jsonb := '[]'::jsonb;
      BEGIN
        FOR bu IN SELECT *, ${current('budgets', 'p_now')} AS cur FROM budgets
                  WHERE (scope = 'project' AND scope_id = p_project) OR (scope = 'key' AND scope_id = p_key) ORDER BY scope, scope_id FOR UPDATE LOOP
          IF bu.period_start < bu.cur THEN s_tokens := 0; s_cost := 0;
          ELSE s_tokens := bu.spent_tokens + bu.held_tokens; s_cost := bu.spent_cost + bu.held_cost;
          END IF;
          IF (bu.tokens IS NOT NULL AND s_tokens + p_tokens > bu.tokens::float8) OR (bu.cost IS NOT NULL AND s_cost + p_cost > bu.cost::float8) THEN fits := false; END IF;
          found := found || jsonb_build_array(jsonb_build_object('scope', bu.scope, 'scopeId', bu.scope_id, 'period', bu.period, 'tokens', bu.tokens::float8, 'cost', bu.cost::float8,
            'warnAt', bu.warn_at::float8, 'updatedAt', bu.updated_at, 'spentTokens', s_tokens, 'spentCost', s_cost));
        END LOOP;
        IF jsonb_array_length(found) = 0 OR NOT fits THEN RETURN jsonb_build_object('inserted', false, 'budgets', found); END IF;
        INSERT INTO budget_reservations (request_id, project_id, key_id, tokens, cost, created_at) VALUES (p_request, p_project, NULLIF(p_key, ''), p_tokens, p_cost, p_now);
        UPDATE budgets b SET
          spent_tokens = CASE WHEN b.period_start < x.cur THEN 0 ELSE b.spent_tokens END,
          spent_cost = CASE WHEN b.period_start < x.cur THEN 0 ELSE b.spent_cost END,
          held_tokens = CASE WHEN b.period_start < x.cur THEN 0 ELSE b.held_tokens END + p_tokens,
          held_cost = CASE WHEN b.period_start < x.cur THEN 0 ELSE b.held_cost END + p_cost,
          period_start = x.cur
        FROM (SELECT scope, scope_id, ${current('o', 'p_now')} AS cur FROM budgets o
               WHERE (o.scope = 'project' AND o.scope_id = p_project) OR (o.scope = 'key' AND o.scope_id = p_key)) x
        WHERE b.scope = x.scope AND b.scope_id = x.scope_id;
        RETURN jsonb_build_object('inserted', true, 'budgets', found);
      END $$`);

    // What existing budgets hold now: reservations of ended runs go (they no longer counted), the
    // counters start from the period's sums as the old admission computed them.
    await q.query(`DELETE FROM budget_reservations v USING runs r WHERE r.request_id = v.request_id AND r.status NOT IN ('running', 'awaiting_approval', 'paused')`);
    await q.query(`UPDATE budgets b SET period_start = x.since,
        spent_tokens = (SELECT COALESCE(sum((r.usage->>'totalTokens')::float8), 0) FROM runs r
                         WHERE (CASE WHEN b.scope = 'project' THEN r.project_id ELSE r.key_id END) = b.scope_id AND r.created_at >= x.since AND r.status NOT IN ('running', 'awaiting_approval', 'paused')),
        spent_cost = (SELECT COALESCE(sum((r.usage->>'cost')::float8), 0) FROM runs r
                       WHERE (CASE WHEN b.scope = 'project' THEN r.project_id ELSE r.key_id END) = b.scope_id AND r.created_at >= x.since AND r.status NOT IN ('running', 'awaiting_approval', 'paused')),
        held_tokens = (SELECT COALESCE(sum(v.tokens::float8), 0) FROM budget_reservations v WHERE (CASE WHEN b.scope = 'project' THEN v.project_id ELSE v.key_id END) = b.scope_id AND v.created_at >= x.since),
        held_cost = (SELECT COALESCE(sum(v.cost::float8), 0) FROM budget_reservations v WHERE (CASE WHEN b.scope = 'project' THEN v.project_id ELSE v.key_id END) = b.scope_id AND v.created_at >= x.since)
      FROM (SELECT scope, scope_id, date_trunc(period, now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS since FROM budgets) x
      WHERE b.scope = x.scope AND b.scope_id = x.scope_id`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP FUNCTION orion_budget_admit(uuid, text, text, float8, float8, timestamptz)');
    await q.query('DROP FUNCTION orion_budget_release(uuid)');
    await q.query('DROP TRIGGER runs_budget_settle ON runs');
    await q.query('DROP FUNCTION orion_budget_settle()');
    await q.query('DROP FUNCTION orion_budget_count(text, text, timestamptz, float8, float8, timestamptz, float8, float8)');
    await q.query('ALTER TABLE budgets DROP COLUMN period_start, DROP COLUMN spent_tokens, DROP COLUMN spent_cost, DROP COLUMN held_tokens, DROP COLUMN held_cost');
    // the sum-based admission of 1764680000000 (it reads runs and reservations, which these counters only mirrored)
    await new BudgetAdmit1764680000000().up(q);
  }
}
