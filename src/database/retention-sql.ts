/**
 * The SQL every retention statement shares (issue 43): which rows are past their retention,
 * per project (`project_retention`, NULL: the deployment's value, -1: kept for ever) over the
 * deployment's value, and which runs are never touched. Parameters are passed by the caller as
 * `$n` names: the deployment's value in milliseconds (-1: kept for ever) and the smallest value
 * of any project or the deployment (the bound that lets the statement use an index on time).
 */

/** Runs that are live (running, queued behind an approval) or paused: none of their rows is ever removed. */
export const HELD_STATUSES = `('running', 'awaiting_approval', 'paused')`;
/** Runs that ended. */
export const ENDED_STATUSES = `('completed', 'cancelled', 'failed')`;

export type RetentionKind = 'runs' | 'trace' | 'conversations';

/** The retention in milliseconds of the project named by the SQL `projectSql`, for `kind` (-1 or below: for ever). */
export function retentionOf(kind: RetentionKind, projectSql: string, deploymentParam: string): string {
  return `COALESCE((SELECT p.${kind}_ms FROM project_retention p WHERE p.project_id = ${projectSql}), ${deploymentParam}::bigint)`;
}

/**
 * `timeSql` (a timestamptz) is past the retention of `kind` for the project named by `projectSql`:
 * first against the smallest retention (an index range), then the project's own.
 */
export function pastRetention(kind: RetentionKind, timeSql: string, projectSql: string, deploymentParam: string, minParam: string): string {
  const own = retentionOf(kind, projectSql, deploymentParam);
  return `${timeSql} < now() - make_interval(secs => ${minParam}::float8 / 1000)
          AND ${own} > 0 AND ${timeSql} < now() - make_interval(secs => ${own}::float8 / 1000)`;
}

/** The request ids (uuid) of runs that begin the answer of a live or paused run: its fork ancestors. */
export const HELD_ANCESTORS = `WITH RECURSIVE held(id) AS (
           SELECT h.parent_request_id FROM runs h WHERE h.status IN ${HELD_STATUSES} AND h.parent_request_id IS NOT NULL
           UNION SELECT a.parent_request_id FROM runs a JOIN held ON a.request_id = held.id WHERE a.parent_request_id IS NOT NULL)
         SELECT id FROM held`;
