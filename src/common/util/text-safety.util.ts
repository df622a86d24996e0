import { deepMap } from './deep-map.util';
import { redactString } from './redact.util';

/**
 * PostgreSQL `text` and `jsonb` cannot hold U+0000. Text that reaches storage from a model or
 * a tool (client input with NUL is refused with a 400 instead) has it replaced by U+FFFD, the
 * replacement character, so one stray byte never fails a turn or a trace batch.
 */
export const NUL = /\u0000/g;
export const REPLACEMENT = '\uFFFD';

export function stripNul(s: string): string {
  return s.includes('\u0000') ? s.replace(NUL, REPLACEMENT) : s;
}

/**
 * Deep copy safe to store and stream: NUL replaced and known secret values masked in every
 * string (keys included). Depth-limited; values that need no change are returned as they are.
 */
export function storageSafe<T>(value: T, secrets: readonly string[] = []): T {
  return deepMap(value, { maxDepth: 64, leaf: (v) => (typeof v === 'string' ? redactString(stripNul(v), secrets) : v), key: stripNul }) as T;
}
