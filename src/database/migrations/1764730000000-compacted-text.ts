import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Issue 43, bytes per compacted turn: a compacted run's events row (run_events, type 'events')
 * is stored from now on as a JSON string of `{e: envelope, v: events}` (src/runs/compacted-row.ts)
 * and a folded trace row's `records` (trace_events, type 'trace_folded') as a JSON string of the
 * array, because TOAST's pglz compresses JSON text to about four fifths of what it makes of the
 * same array in jsonb's binary form (bench:storage's sizing turns: 2.5 KB → 2.0 KB per run's
 * events before the envelope is taken out, 1.9 KB → 1.5 KB per run's trace). Rows written before
 * stay arrays; readers take both. Only the view run_event_list looks inside a row: it decodes
 * the string here as compacted-row.ts does. Down turns the strings back into arrays first, so
 * the view before reads every row.
 */
export class CompactedText1764730000000 implements MigrationInterface {
  name = 'CompactedText1764730000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(viewWith(DECODED));
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`UPDATE run_events e SET data = (SELECT COALESCE(jsonb_agg(jsonb_build_object('s', x.data->'s', 't', x.data->'t', 'd', ${EVENT_DATA}) ORDER BY x.i), '[]'::jsonb)
                     FROM jsonb_array_elements(${V}) WITH ORDINALITY AS x(data, i)) WHERE e.type = 'events' AND jsonb_typeof(e.data) = 'string'`);
    await q.query(`UPDATE trace_events SET details = jsonb_set(details, '{records}', (details->>'records')::jsonb) WHERE type = 'trace_folded' AND jsonb_typeof(details->'records') = 'string'`);
    await q.query(viewWith('e.data'));
  }
}

/** a string row's `{e, v}` (compacted-row.ts) */
const PACKED = `((e.data #>> '{}')::jsonb)`;
const V = `${PACKED}->'v'`;
/** one event's data (x.data, an element of v) decoded: the envelope and its seq, less the keys it lists in x, under its own keys */
const EVENT_DATA = `((${PACKED}->'e' || jsonb_build_object('seq', x.data->'s')) - ARRAY(SELECT jsonb_array_elements_text(COALESCE(x.data->'x', '[]'::jsonb)))) || (x.data->'d')`;
/** the view's compacted rows as {s, t, d} elements, in either form */
const DECODED = `CASE WHEN jsonb_typeof(e.data) = 'string' THEN (SELECT jsonb_agg(jsonb_build_object('s', x.data->'s', 't', x.data->'t', 'd', ${EVENT_DATA})) FROM jsonb_array_elements(${V}) AS x(data)) ELSE e.data END`;

/** The view of migration 1764560000000 (one row per event), reading a compacted row's array from `events`. */
function viewWith(events: string): string {
  return `CREATE OR REPLACE VIEW run_event_list AS
      SELECT e.request_id, e.seq, e.type, e.data, e.created_at FROM run_events e WHERE e.last_seq IS NULL
      UNION ALL
      SELECT e.request_id, e.seq + (x.i - 1)::int AS seq, 'chunk' AS type, x.data, e.created_at
        FROM run_events e, jsonb_array_elements(e.data) WITH ORDINALITY AS x(data, i)
       WHERE e.last_seq IS NOT NULL AND e.type <> 'events'
      UNION ALL
      SELECT e.request_id, (x.data->>'s')::int AS seq, x.data->>'t' AS type, x.data->'d' AS data, e.created_at
        FROM run_events e, jsonb_array_elements(${events}) AS x(data)
       WHERE e.last_seq IS NOT NULL AND e.type = 'events'`;
}
