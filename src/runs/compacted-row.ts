/**
 * The stored form of a compacted run's events row (run_events, type 'events'; issue 43): one
 * JSON string holding `{e, v}`, where `v` is the run's events as `{s: seq, t: type, d: data}` and
 * `e` the envelope every event of the run repeats (requestId, conversationId, projectId), taken
 * out of each `d` together with `d.seq` (the same as `s`). `x` on an event lists the envelope
 * keys (and `seq`) that event did not carry or carried with another value (kept in `d`), so
 * decoding gives back every event exactly. Why a string and not a jsonb array: TOAST's pglz
 * compresses the JSON text to about four fifths of the jsonb array, and with the envelope out a
 * two-cycle turn's events fit in the row itself (under PostgreSQL's 2 KB TOAST threshold)
 * instead of two TOAST chunks. The view run_event_list decodes the same way in SQL (migration
 * 1764730000000). Rows compacted before are jsonb arrays of `{s, t, d}`, decoded as they are.
 */

/** One event as a compacted row holds it. */
interface PackedEvent {
  s: number;
  t: string;
  d: Record<string, unknown>;
  /** keys of the envelope (or `seq`) not to add back to this event's data */
  x?: string[];
}

/** The keys every event of a run repeats, as the envelope holds them. */
const ENVELOPE_KEYS = ['requestId', 'conversationId', 'projectId'] as const;

/** A run's events, in seq order, as they are stored and read. */
export interface CompactedEvent {
  seq: number;
  type: string;
  data: Record<string, unknown>;
}

/** The JSON text stored (as a jsonb string) for a run's compacted events. */
export function encodeCompacted(events: readonly CompactedEvent[]): string {
  const e: Record<string, unknown> = {};
  for (const k of ENVELOPE_KEYS) {
    const first = events.find((ev) => ev.data[k] !== undefined);
    if (first) e[k] = first.data[k];
  }
  const v = events.map((ev): PackedEvent => {
    const d = { ...ev.data };
    const x: string[] = [];
    for (const k of Object.keys(e)) {
      if (d[k] === e[k]) delete d[k];
      else if (!(k in d)) x.push(k);
    }
    if (d.seq === ev.seq) delete d.seq;
    else if (!('seq' in d)) x.push('seq');
    return x.length > 0 ? { s: ev.seq, t: ev.type, d, x } : { s: ev.seq, t: ev.type, d };
  });
  return JSON.stringify({ e, v });
}

/** A compacted row's `data` as read (the JSON string, or an array from before the string) → its events. */
export function decodeCompacted(data: unknown): CompactedEvent[] {
  const stored = (typeof data === 'string' ? JSON.parse(data) : data) as PackedEvent[] | { e: Record<string, unknown>; v: PackedEvent[] };
  if (Array.isArray(stored)) return stored.map((p) => ({ seq: Number(p.s), type: p.t, data: p.d }));
  return stored.v.map((p) => {
    const data: Record<string, unknown> = { ...stored.e, seq: p.s, ...p.d };
    for (const k of p.x ?? []) if (!(k in p.d)) delete data[k];
    return { seq: Number(p.s), type: p.t, data };
  });
}
