/**
 * How a run's events are laid out in run_events rows, one job shared by every statement that
 * writes or reads them: consecutive chunks packed into one row (`packRows`), a compacted run's one
 * row (COMPACTED_ROW_TYPE), and the events a stored row holds (`unpack`, EVENTS_IN_ROW). Kept
 * apart from RunEventRepository's statements so that the format has one definition the writer,
 * the readers, compaction and deletion all use. Plain functions and constants, no state.
 */
import { type JsonCell, jsonRows, RawJson } from '../../database/json-rows';
import { decodeCompacted } from '../compacted-row';

/** One event of a run as stored and sent. */
export interface StoredRunEvent {
  seq: number;
  type: string;
  data: Record<string, unknown>;
  /** `data` already serialized (JSON), when the caller has it: stored and sent as is */
  json?: string;
}

/** A stored row: one event, or (`lastSeq` set) consecutive chunks seq…lastSeq as a JSON array. */
export interface PackedRow {
  seq: number;
  lastSeq: number | null;
  type: string;
  json: string;
}

/**
 * The rows that store `events`: each run of two or more chunks with consecutive seqs (a run's
 * writes are in seq order) becomes one row, anything else stays a row of its own. A loaded
 * turn's writes carry several chunks each, and a row per chunk was most of the rows, index
 * entries and WAL a turn cost the database; phase events stay single rows, which the progress
 * update reads.
 */
export function packRows(events: readonly StoredRunEvent[]): PackedRow[] {
  const out: PackedRow[] = [];
  for (let i = 0; i < events.length; ) {
    let j = i;
    while (events[i].type === 'chunk' && j + 1 < events.length && events[j + 1].type === 'chunk' && events[j + 1].seq === events[j].seq + 1) j++;
    if (j === i) out.push({ seq: events[i].seq, lastSeq: null, type: events[i].type, json: jsonOf(events[i]) });
    else out.push({ seq: events[i].seq, lastSeq: events[j].seq, type: 'chunks', json: `[${events.slice(i, j + 1).map(jsonOf).join(',')}]` });
    i = j + 1;
  }
  return out;
}

/** A packed row's cells for jsonRows: seq, last_seq, type, data (read back by PACKED_CELLS). */
export function cellsOf(r: PackedRow): JsonCell[] {
  return [r.seq, r.lastSeq, r.type, new RawJson(r.json)];
}

/** cellsOf's cells of a jsonRows element `e`, as run_events' seq, last_seq, type, data. */
export const PACKED_CELLS = `(e->>0)::int, (e->>1)::int, e->>2, e->3`;

/** A run's events as one jsonRows parameter of packed rows. */
export function packedRows(events: readonly StoredRunEvent[]): string {
  return jsonRows(packRows(events).map(cellsOf));
}

function jsonOf(e: StoredRunEvent): string {
  return e.json ?? JSON.stringify(e.data);
}

/** A run_events row as read back. */
export interface StoredRow {
  seq: number;
  last_seq: number | null;
  type: string;
  data: Record<string, unknown> | Array<Record<string, unknown>> | string;
}

/**
 * The row type of a compacted run (issue 43, src/runs/compaction.ts): all its events in one row,
 * seq…last_seq (the seqs have gaps where chunks were folded); `data` as src/runs/compacted-row.ts
 * encodes it (a JSON string since migration 1764730000000, an array of `{s, t, d}` before).
 */
export const COMPACTED_ROW_TYPE = 'events';

/** A compacted row's `data` in SQL (for counting its events): the array of its events, in either form. */
export const COMPACTED_EVENTS_SQL = (data: string) =>
  `(CASE WHEN jsonb_typeof(${data}) = 'string' THEN ((${data} #>> '{}')::jsonb)->'v' ELSE ${data} END)`;

/** The events a stored row holds, in seq order. */
export function unpack(row: StoredRow): StoredRunEvent[] {
  if (row.type === COMPACTED_ROW_TYPE) return decodeCompacted(row.data);
  if (row.last_seq === null) return [{ seq: row.seq, type: row.type, data: row.data as Record<string, unknown> }];
  return (row.data as Array<Record<string, unknown>>).map((data, i) => ({ seq: row.seq + i, type: 'chunk', data }));
}

/** Events a row holds, in SQL (for counts). */
export const EVENTS_IN_ROW = `CASE WHEN type = '${COMPACTED_ROW_TYPE}' THEN jsonb_array_length(${COMPACTED_EVENTS_SQL('data')}) ELSE COALESCE(last_seq, seq) - seq + 1 END`;
