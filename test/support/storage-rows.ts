import { randomUUID } from 'node:crypto';
import type { DataSource } from 'typeorm';

/**
 * A run's rows written and read by hand, for the storage worker's tests: a run in a state no
 * route can leave it in for hours, ages set on the rows instead of waiting, and what is left.
 */

/** Rows of a run in `status`, two hours old, with events and a trace record. */
export async function heldRun(ds: DataSource, status: 'running' | 'awaiting_approval' | 'paused', projectId: string) {
  const conversationId = randomUUID();
  const requestId = randomUUID();
  await ds.query(`INSERT INTO conversations (id, project_id, updated_at) VALUES ($1, $2, now() - interval '2 hours')`, [conversationId, projectId]);
  await ds.query(
    `INSERT INTO runs (request_id, conversation_id, project_id, protocol, status, lease_owner, lease_expires_at, updated_at, created_at)
     VALUES ($1, $2, $3, 'two-stage', $4, 'elsewhere', now() + interval '1 hour', now() - interval '2 hours', now() - interval '2 hours')`,
    [requestId, conversationId, projectId, status],
  );
  await ds.query(`INSERT INTO run_events (request_id, seq, type, data, created_at, run_created_at) SELECT $1::uuid, v.seq, v.type, v.data::jsonb, now() - interval '2 hours', r.created_at FROM runs r, (VALUES (1, 'start', '{}'), (2, 'chunk', '{"content":"a"}'), (3, 'chunk', '{"content":"b"}')) AS v(seq, type, data) WHERE r.request_id = $1`, [requestId]);
  await ds.query(`INSERT INTO trace_events (request_id, project_id, type, created_at) VALUES ($1, $2, 'run_started', now() - interval '2 hours')`, [requestId, projectId]);
  return { requestId, conversationId };
}

/** Makes a run, its trace records and its conversation two hours old. */
export const ageRun = (ds: DataSource, requestId: string, conversationId: string) =>
  Promise.all([
    ds.query(`UPDATE runs SET updated_at = now() - interval '2 hours' WHERE request_id = $1`, [requestId]),
    ds.query(`UPDATE trace_events SET created_at = now() - interval '2 hours' WHERE request_id = $1`, [requestId]),
    ds.query(`UPDATE conversations SET updated_at = now() - interval '2 hours' WHERE id = $1`, [conversationId]),
  ]);

/** How many rows of the run and its conversation are left. */
export async function rowsOf(ds: DataSource, requestId: string, conversationId: string) {
  const [r] = (await ds.query(
    `SELECT (SELECT count(*) FROM runs WHERE request_id = $1)::int AS runs, (SELECT count(*) FROM run_events WHERE request_id = $1)::int AS events,
            (SELECT count(*) FROM trace_events WHERE request_id = $1::text)::int AS trace, (SELECT count(*) FROM conversations WHERE id = $2)::int AS conversations`,
    [requestId, conversationId],
  )) as Array<{ runs: number; events: number; trace: number; conversations: number }>;
  return r;
}
