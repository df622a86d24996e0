/** Returned by an `object` or `member` rule: walk into the value as usual. */
export const WALK: unique symbol = Symbol('walk');

export interface DeepMapRules {
  /** objects nested deeper than this become `tooDeep(value)` (default: left as they are) */
  maxDepth: number;
  tooDeep?: (v: object) => unknown;
  /** what an object seen again becomes: `cycle` counts its ancestors only, `any` every earlier visit */
  repeats?: { of: 'cycle' | 'any'; becomes: unknown };
  /** every non-object value (strings included); default: as it is */
  leaf?: (v: unknown) => unknown;
  /** an object before it is walked: WALK, or a replacement that is walked instead (Date, toJSON) */
  object?: (v: object) => unknown;
  key?: (k: string) => string;
  /** a member before it is walked: WALK, or its final value */
  member?: (key: string, value: unknown) => unknown;
  /** what `undefined` becomes inside arrays (JSON: null); members that map to `undefined` are dropped */
  arrayUndefined?: unknown;
  /** what a member whose getter throws becomes (default: the error propagates) */
  unreadable?: unknown;
}

/**
 * The one deep copy behind redaction, storage safety and JSON safety: plain objects and arrays
 * are copied member by member under the rules; nothing is mutated. Keys are defined, not
 * assigned, so a `__proto__` key stays data.
 */
export function deepMap(value: unknown, r: DeepMapRules): unknown {
  // only walks that look for repeats pay for tracking them (storageSafe runs on every run event):
  // the objects on the current path (`cycle`) or every object met (`any`)
  const repeats = r.repeats;
  const tracked = repeats ? new Set<object>() : null;
  const ancestorsOnly = repeats?.of === 'cycle';
  const mapsArrayUndefined = 'arrayUndefined' in r;
  const survivesUnreadable = 'unreadable' in r;
  const walk = (v: unknown, depth: number): unknown => {
    if (v === null || typeof v !== 'object') return r.leaf ? r.leaf(v) : v;
    if (tracked) {
      if (tracked.has(v)) return repeats!.becomes;
      if (depth > r.maxDepth) return r.tooDeep ? r.tooDeep(v) : v;
      tracked.add(v);
      if (!ancestorsOnly) return copy(v, depth);
      try {
        return copy(v, depth);
      } finally {
        tracked.delete(v);
      }
    }
    if (depth > r.maxDepth) return r.tooDeep ? r.tooDeep(v) : v;
    return copy(v, depth);
  };
  const copy = (v: object, depth: number): unknown => {
    const replaced = r.object ? r.object(v) : WALK;
    if (replaced !== WALK) return walk(replaced, depth + 1);
    if (Array.isArray(v)) {
      return v.map((x) => {
        const y = walk(x, depth + 1);
        return y === undefined && mapsArrayUndefined ? r.arrayUndefined : y;
      });
    }
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(v)) {
      let y: unknown;
      try {
        const x = (v as Record<string, unknown>)[k];
        const m = r.member ? r.member(k, x) : WALK;
        y = m === WALK ? walk(x, depth + 1) : m;
      } catch (err) {
        if (!survivesUnreadable) throw err;
        y = r.unreadable;
      }
      if (y === undefined && mapsArrayUndefined) continue;
      const key = r.key ? r.key(k) : k;
      // assignment is the fast path; only `__proto__` would set the prototype instead
      if (key === '__proto__') Object.defineProperty(out, key, { value: y, enumerable: true, writable: true, configurable: true });
      else out[key] = y;
    }
    return out;
  };
  return walk(value, 0);
}
