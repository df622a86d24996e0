/**
 * Compaction of an ended run's stream (issue 43): what only a live stream needed, its chunk
 * events one by one, is folded into one chunk per phase, and the run's events are then stored as
 * one row (COMPACTED_ROW_TYPE, which PostgreSQL's TOAST compresses as a whole). The folded chunk keeps the seq (and the
 * envelope) of the phase's first chunk and carries the phase's whole text, with
 * `compacted: true` and `throughSeq`, the seq of the phase's last chunk; the seqs in between are
 * gone (the events route is gap-tolerant, docs/API.md, Storage). Every other event stays as it
 * was, so what reads a run's events after it ended (fork and resume points, the steps, a fork's
 * prefix, the answer rebuilt by textUpTo) reads the same text and the same steps.
 */

import { COMPACTED_ROW_TYPE, unpack, type StoredRow, type StoredRunEvent } from './repositories/run-event-rows';

/** A stored row of chunk events: one chunk (`lastSeq` null, `data` the event), or chunks seq…lastSeq (`data` their array). */
export interface ChunkRow {
  id: string;
  seq: number;
  lastSeq: number | null;
  data: Record<string, unknown> | Array<Record<string, unknown>>;
}

/** How one run's chunk rows become one row per phase. */
export interface ChunkFold {
  /** rows rewritten as the folded chunk of a phase (a phase's first chunk starts the row) */
  rewrite: Array<{ id: string; data: Record<string, unknown> }>;
  /** rows whose chunks are folded elsewhere */
  remove: string[];
  /** folded chunks stored as a new row (a phase whose first chunk does not start a row: not written today, kept general) */
  insert: Array<{ seq: number; data: Record<string, unknown> }>;
  /** chunk events before, folded chunks after */
  chunksBefore: number;
  chunksAfter: number;
}

/** The chunk events a row holds, with their seqs. */
function eventsOf(row: ChunkRow): Array<{ seq: number; data: Record<string, unknown> }> {
  if (row.lastSeq === null) return [{ seq: row.seq, data: row.data as Record<string, unknown> }];
  return (row.data as Array<Record<string, unknown>>).map((data, i) => ({ seq: row.seq + i, data }));
}

/**
 * Folds one run's chunk rows (any order): one chunk per phase, in the row of the phase's first
 * chunk. `cuts`: the [from, until) seq ranges a takeover superseded (liveEvents, issue 44): a
 * phase's chunks inside one are folded apart from the same phase's live ones, so the folded
 * chunk of the continued phase is not starting in the superseded range (and dropped with it).
 */
export function foldChunks(rows: readonly ChunkRow[], cuts: ReadonlyArray<readonly [number, number]> = []): ChunkFold {
  const sorted = [...rows].sort((a, b) => a.seq - b.seq);
  const keyOf = (seq: number, phase: number) => {
    const cut = cuts.find(([from, until]) => seq >= from && seq < until);
    return cut ? `cut${cut[1]}:${phase}` : `${cuts.filter(([, until]) => until <= seq).length}:${phase}`;
  };
  const phases = new Map<string, { first: { seq: number; data: Record<string, unknown> }; lastSeq: number; text: string[] }>();
  let chunksBefore = 0;
  for (const row of sorted) {
    for (const e of eventsOf(row)) {
      chunksBefore++;
      const phase = keyOf(e.seq, Number(e.data.phaseIndex) || 0);
      const p = phases.get(phase);
      if (!p) phases.set(phase, { first: e, lastSeq: e.seq, text: [String(e.data.content ?? '')] });
      else {
        p.lastSeq = e.seq;
        p.text.push(String(e.data.content ?? ''));
      }
    }
  }
  const rowAt = new Map(sorted.map((r) => [r.seq, r]));
  const kept = new Set<string>();
  const fold: ChunkFold = { rewrite: [], remove: [], insert: [], chunksBefore, chunksAfter: phases.size };
  for (const p of phases.values()) {
    const data = { ...p.first.data, content: p.text.join(''), compacted: true, throughSeq: p.lastSeq };
    const row = rowAt.get(p.first.seq);
    if (row && !kept.has(row.id)) {
      kept.add(row.id);
      fold.rewrite.push({ id: row.id, data });
    } else fold.insert.push({ seq: p.first.seq, data });
  }
  for (const r of sorted) if (!kept.has(r.id)) fold.remove.push(r.id);
  return fold;
}

/** A run's stored row, with its id. */
export interface RunRow extends StoredRow {
  id: string;
  /** when the row was stored (the compacted row keeps the earliest: partitions and the oldest-row age go by it) */
  created_at?: Date | string;
}

/** A compacted run's one row: its events after folding, seq…lastSeq. */
export interface CompactedRun {
  seq: number;
  lastSeq: number;
  type: typeof COMPACTED_ROW_TYPE;
  events: StoredRunEvent[];
  /** the earliest created_at of the rows it replaces (ISO 8601), null when unknown */
  createdAt: string | null;
  chunksBefore: number;
  chunksAfter: number;
}

/**
 * The one row a run's rows become: every event but its chunks as stored, and one chunk per phase
 * (foldChunks) at the seq of the phase's first chunk. Null for a run with no row, or one already
 * compacted into a single row.
 */
export function compactRun(rows: readonly RunRow[]): CompactedRun | null {
  if (rows.length === 0 || (rows.length === 1 && rows[0].type === COMPACTED_ROW_TYPE)) return null;
  const chunkRows: ChunkRow[] = [];
  const events: StoredRunEvent[] = [];
  for (const r of rows) {
    if (r.type === 'chunk' || r.type === 'chunks') chunkRows.push({ id: r.id, seq: r.seq, lastSeq: r.last_seq, data: r.data as ChunkRow['data'] });
    else events.push(...unpack(r));
  }
  // a takeover's start supersedes the phase cut short: its chunks fold apart (foldChunks)
  const cuts = events.filter((e) => e.type === 'start' && typeof e.data.supersedesFromSeq === 'number').map((e) => [Number(e.data.supersedesFromSeq), e.seq] as const);
  const fold = foldChunks(chunkRows, cuts);
  const startOf = new Map(chunkRows.map((c) => [c.id, c.seq]));
  for (const w of fold.rewrite) events.push({ seq: startOf.get(w.id)!, type: 'chunk', data: w.data });
  for (const i of fold.insert) events.push({ seq: i.seq, type: 'chunk', data: i.data });
  events.sort((a, b) => a.seq - b.seq);
  const times = rows.filter((r) => r.created_at !== undefined).map((r) => new Date(r.created_at!).getTime());
  const createdAt = times.length > 0 ? new Date(Math.min(...times)).toISOString() : null;
  return { seq: events[0].seq, lastSeq: events[events.length - 1].seq, type: COMPACTED_ROW_TYPE, events, createdAt, chunksBefore: fold.chunksBefore, chunksAfter: fold.chunksAfter };
}
