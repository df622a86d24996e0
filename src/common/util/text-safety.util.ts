import { deepMap } from './deep-map.util';
import { redactString, redactsNothing } from './redact.util';

/**
 * PostgreSQL `text` and `jsonb` cannot hold U+0000. Text that reaches storage from a model or
 * a tool (client input with NUL is refused with a 400 instead) has it replaced by U+FFFD, the
 * replacement character, so one stray byte never fails a turn or a trace batch.
 */
export const NUL = /\u0000/g;
export const REPLACEMENT = '\uFFFD';

/** String.prototype.isWellFormed/toWellFormed (Node 20+; the TypeScript lib here predates them). */
interface WellFormed {
  isWellFormed(): boolean;
  toWellFormed(): string;
}

/**
 * NUL and lone UTF-16 surrogates (a model's split emoji, a fuzzed stream) become U+FFFD:
 * PostgreSQL refuses both in text/jsonb, and one such character must not fail a turn.
 */
export function stripNul(s: string): string {
  const es2024 = s as unknown as WellFormed;
  const wellFormed = es2024.isWellFormed() ? s : es2024.toWellFormed();
  return wellFormed.includes('\u0000') ? wellFormed.replace(NUL, REPLACEMENT) : wellFormed;
}

/**
 * A value safe to store and stream: NUL and lone surrogates replaced, known secret values masked
 * in every string (keys: NUL and surrogates only). Depth-limited (64). What has something to
 * change is deep-copied with it changed; what has nothing to change (plain objects and arrays
 * whose every string is already safe: nearly every run event) is returned as it is, which is
 * what the copy would have been, without making it.
 */
export function storageSafe<T>(value: T, secrets: readonly string[] = []): T {
  if (unchangedBySafety(value, secrets, 0)) return value;
  return deepMap(value, { maxDepth: MAX_DEPTH, leaf: (v) => (typeof v === 'string' ? redactString(stripNul(v), secrets) : v), key: stripNul }) as T;
}

const MAX_DEPTH = 64;

/**
 * Whether storageSafe's copy would equal `v` member for member: every string (values and keys)
 * unchanged, and every object it walks a plain object or array (the copy of anything else, a
 * Date, a class instance, an object without a prototype, is a plain object: not the same). Walks what the copy walks, no more.
 */
function unchangedBySafety(v: unknown, secrets: readonly string[], depth: number): boolean {
  if (typeof v === 'string') return isWellFormedText(v) && redactsNothing(v, secrets);
  if (v === null || typeof v !== 'object') return true;
  if (depth > MAX_DEPTH) return true; // left as it is by the copy too
  const proto: unknown = Object.getPrototypeOf(v);
  if (Array.isArray(v)) {
    if (proto !== Array.prototype) return false;
    for (let i = 0; i < v.length; i++) if (!unchangedBySafety(v[i], secrets, depth + 1)) return false;
    return true;
  }
  if (proto !== Object.prototype) return false;
  for (const k of Object.keys(v)) {
    if (!isWellFormedText(k) || k.includes('\u0000')) return false;
    if (!unchangedBySafety((v as Record<string, unknown>)[k], secrets, depth + 1)) return false;
  }
  return true;
}

function isWellFormedText(s: string): boolean {
  return (s as unknown as WellFormed).isWellFormed();
}
