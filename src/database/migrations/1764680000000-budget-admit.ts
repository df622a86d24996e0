import type { MigrationInterface, QueryRunner } from 'typeorm';

/** The period's sum of one budget for orion_budget_admit (`col`: the runs' column the budget counts by). */
const sum = (col: string): string => `
  SELECT COALESCE(sum(t), 0)::float8, COALESCE(sum(c), 0)::float8 INTO s_tokens, s_cost FROM (
    SELECT COALESCE((r.usage->>'totalTokens')::bigint, 0) AS t, COALESCE((r.usage->>'cost')::numeric, 0) AS c
      FROM runs r WHERE r.${col} = b.scope_id AND r.created_at >= since AND r.status NOT IN ('running', 'awaiting_approval', 'paused')
    UNION ALL
    SELECT v.tokens, v.cost FROM budget_reservations v LEFT JOIN runs r ON r.request_id = v.request_id
     WHERE v.${col} = b.scope_id AND v.created_at >= since
       AND (r.status IN ('running', 'awaiting_approval', 'paused') OR (r.request_id IS NULL AND v.created_at > now() - make_interval(secs => p_orphan_ms / 1000)))
  ) u;`;

/**
 * Issue 46 item 5: a send's budget admission in one round trip. Its statements run in the
 * function in order, each with its own READ COMMITTED snapshot: the lock first, then each
 * budget's sum, which so sees every reservation committed before the lock was granted, then the
 * reservation if it fits them all. The lock is held until the calling statement's transaction
 * ends. Returns {inserted, budgets: [...each locked row with what its period had spent]}.
 */
export class BudgetAdmit1764680000000 implements MigrationInterface {
  name = 'BudgetAdmit1764680000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE FUNCTION orion_budget_admit(p_request uuid, p_project text, p_key text, p_tokens float8, p_cost float8, p_now timestamptz, p_orphan_ms float8)
      RETURNS jsonb LANGUAGE plpgsql VOLATILE AS $$
      DECLARE
        b record; since timestamptz; s_tokens float8; s_cost float8; fits boolean := true; found jsonb := '[]'::jsonb;
      BEGIN
        PERFORM 1 FROM budgets WHERE (scope = 'project' AND scope_id = p_project) OR (scope = 'key' AND scope_id = p_key) ORDER BY scope, scope_id FOR UPDATE;
        FOR b IN SELECT * FROM budgets WHERE (scope = 'project' AND scope_id = p_project) OR (scope = 'key' AND scope_id = p_key) ORDER BY scope, scope_id LOOP
          since := date_trunc(b.period, p_now AT TIME ZONE 'UTC') AT TIME ZONE 'UTC';
          IF b.scope = 'project' THEN ${sum('project_id')}
          ELSE ${sum('key_id')}
          END IF;
          IF (b.tokens IS NOT NULL AND s_tokens + p_tokens > b.tokens::float8) OR (b.cost IS NOT NULL AND s_cost + p_cost > b.cost::float8) THEN fits := false; END IF;
          found := found || jsonb_build_array(jsonb_build_object('scope', b.scope, 'scopeId', b.scope_id, 'period', b.period, 'tokens', b.tokens::float8, 'cost', b.cost::float8,
            'warnAt', b.warn_at::float8, 'updatedAt', b.updated_at, 'spentTokens', s_tokens, 'spentCost', s_cost));
        END LOOP;
        IF jsonb_array_length(found) = 0 THEN RETURN jsonb_build_object('inserted', false, 'budgets', found); END IF;
        IF fits THEN
          INSERT INTO budget_reservations (request_id, project_id, key_id, tokens, cost) VALUES (p_request, p_project, NULLIF(p_key, ''), p_tokens, p_cost);
        END IF;
        RETURN jsonb_build_object('inserted', fits, 'budgets', found);
      END $$`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP FUNCTION orion_budget_admit(uuid, text, text, float8, float8, timestamptz, float8)');
  }
}
