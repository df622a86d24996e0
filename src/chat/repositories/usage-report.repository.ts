import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { queryResult } from '../../database/query-result';

export type UsageGroupBy = 'day' | 'model' | 'key';

export interface UsageSum {
  group: string | null;
  tokens: number;
  cost: number;
  turns: number;
}

const GROUP: Record<UsageGroupBy, string> = {
  day: `to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD')`,
  model: `options->>'model'`,
  key: `key_id`,
};

/**
 * A turn the report counts: an ended run that called a model at least once. A run that ended
 * before any model call (refused, cancelled while queued, failed at its start) spent nothing and
 * is not a turn here; a run without stored usage is not either (docs/API.md, "Budgets and usage").
 */
const SPENT_TURN = `COALESCE((usage->>'llmCalls')::int, 0) > 0`;

/** A project's usage summed in SQL from its ended runs' stored usage (issue 46; docs/API.md, "Budgets and usage"). */
@Injectable()
export class UsageReportRepository {
  constructor(@InjectDataSource() private readonly ds: DataSource) {}

  /** Ended runs started in [from, to) that called a model: one total row, or one per group, ordered by group. */
  async sum(projectId: string, from: Date, to: Date, groupBy?: UsageGroupBy): Promise<UsageSum[]> {
    const group = groupBy ? GROUP[groupBy] : 'NULL::text';
    const rows = queryResult(
      await this.ds.query(
        `SELECT ${group} AS "group", COALESCE(sum((usage->>'totalTokens')::bigint), 0)::float8 AS tokens,
                COALESCE(sum((usage->>'cost')::numeric), 0)::float8 AS cost, count(*)::int AS turns
           FROM runs WHERE project_id = $1 AND created_at >= $2 AND created_at < $3 AND ${SPENT_TURN}
          GROUP BY 1 ORDER BY 1 NULLS LAST`,
        [projectId, from, to],
      ),
    ).rows as Array<Record<string, unknown>>;
    return rows.map((r) => ({ group: (r.group as string | null) ?? null, tokens: Number(r.tokens), cost: Math.round(Number(r.cost) * 1e6) / 1e6, turns: Number(r.turns) }));
  }
}
