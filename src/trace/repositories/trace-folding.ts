/**
 * A compacted run's trace records folded into one trace_events row (issue 43): one row per run
 * instead of one per record saves each record's row header and its four index entries, and the
 * records' JSON, repetitive from one record to the next, is compressed as a whole by TOAST. The
 * row keeps the id of the run's first record (ids are what GET /api/trace orders by: every
 * folded record's id is at least it) and the time of its last (so retention removes no record
 * earlier than its own window would). GET /api/trace unfolds it: every record reads back as
 * stored, same id, type, details and time.
 */
import type { EntityManager } from 'typeorm';
import { TraceEventEntity } from '../trace-event.entity';

/** The type of a folded row; never a record's own type, never returned by GET /api/trace. */
export const FOLDED_TRACE_TYPE = 'trace_folded';

/**
 * The details of a folded row: `records`, each `[id, type, details, created_at in epoch ms]`
 * in id order; `types`, the distinct types of its records (a type filter reads only the rows
 * holding one); `lastId`, the greatest id (a read after an id skips rows wholly before it).
 * Since migration 1764730000000 `records` is a JSON string holding that array's text: TOAST
 * compresses the JSON text to about three quarters of what it makes of the jsonb array, and no
 * query looks inside the records (rows folded before hold the array and read the same).
 */
type FoldedRecord = [number | string, string, Record<string, unknown>, number | string];

export interface FoldedDetails {
  records: FoldedRecord[] | string;
  types: string[];
  lastId: number | string;
}

/** Replaces the plain trace records of these requests by one folded row each; how many records were folded. */
export async function foldTraceRecords(m: EntityManager, requestIds: string[]): Promise<number> {
  if (requestIds.length === 0) return 0;
  const rows = (await m.query(
    `WITH gone AS (
       DELETE FROM trace_events WHERE request_id = ANY($1::varchar[]) AND type <> '${FOLDED_TRACE_TYPE}'
       RETURNING id, request_id, project_id, type, details, created_at
     ), folded AS (
       INSERT INTO trace_events (id, request_id, project_id, type, details, created_at)
       SELECT min(id), request_id, project_id, '${FOLDED_TRACE_TYPE}',
              jsonb_build_object(
                'records', to_jsonb(jsonb_agg(jsonb_build_array(id, type, details, floor(extract(epoch FROM created_at) * 1000)::bigint) ORDER BY id)::text),
                'types', to_jsonb(array_agg(DISTINCT type)),
                'lastId', max(id)),
              max(created_at)
         FROM gone GROUP BY request_id, project_id
       RETURNING 1
     )
     SELECT (SELECT count(*) FROM gone)::int AS n, (SELECT count(*) FROM folded)::int AS rows`,
    [requestIds],
  )) as Array<{ n: number }>;
  return Number(rows[0]?.n ?? 0);
}

/** What a read asks for (TraceQuery's filters). */
export interface FoldedQuery {
  requestId?: string;
  projectId?: string;
  types?: string[];
  limit: number;
  afterId?: number;
}

/** Folded rows read per statement while unfolding. */
const PAGE = 20;

/**
 * The first `q.limit` records by id of `plain` (plain rows matching q, in id order, at most
 * q.limit of them) and of the folded rows matching q. Folded rows are read in id order, a page at
 * a time, until the next one cannot hold a record among the first `limit`: a row's records all
 * have ids at least the row's own.
 */
export async function withFolded(m: EntityManager, q: FoldedQuery, plain: TraceEventEntity[]): Promise<TraceEventEntity[]> {
  let out = plain;
  const where = [`t.type = '${FOLDED_TRACE_TYPE}'`];
  const params: unknown[] = [];
  const param = (v: unknown) => `$${params.push(v)}`;
  if (q.requestId) where.push(`t.request_id = ${param(q.requestId)}`);
  if (q.projectId) where.push(`t.project_id = ${param(q.projectId)}`);
  if (q.types?.length) where.push(`EXISTS (SELECT 1 FROM jsonb_array_elements_text(t.details->'types') y WHERE y = ANY(${param(q.types)}::text[]))`);
  if (q.afterId) where.push(`(t.details->>'lastId')::bigint > ${param(q.afterId)}`);
  const after = param('0');
  const sql = `SELECT id, request_id, project_id, details FROM trace_events t WHERE ${where.join(' AND ')} AND t.id > ${after}::bigint ORDER BY t.id LIMIT ${PAGE}`;
  const types = q.types?.length ? new Set(q.types) : null;
  for (;;) {
    const rows = (await m.query(sql, params)) as Array<{ id: string | number; request_id: string | null; project_id: string | null; details: FoldedDetails }>;
    for (const r of rows) {
      const records = typeof r.details.records === 'string' ? (JSON.parse(r.details.records) as FoldedRecord[]) : r.details.records;
      for (const [id, type, details, at] of records) {
        if (types && !types.has(type)) continue;
        if (q.afterId && Number(id) <= q.afterId) continue;
        out.push(Object.assign(new TraceEventEntity(), { id: String(id), requestId: r.request_id, projectId: r.project_id, type, details, createdAt: new Date(Number(at)) }));
      }
    }
    out.sort((a, b) => Number(a.id) - Number(b.id));
    if (out.length > q.limit) out = out.slice(0, q.limit);
    if (rows.length < PAGE) return out;
    const lastRow = Number(rows[rows.length - 1].id);
    if (out.length >= q.limit && lastRow >= Number(out[q.limit - 1].id)) return out;
    params[params.length - 1] = String(lastRow);
  }
}
