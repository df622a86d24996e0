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
  const walk = (v: unknown, depth: number): unknown => {
    if (typeof v === 'string') return redactString(stripNul(v), secrets);
    if (v === null || typeof v !== 'object' || depth > 64) return v;
    if (Array.isArray(v)) return v.map((x) => walk(x, depth + 1));
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v as Record<string, unknown>)) out[stripNul(k)] = walk(x, depth + 1);
    return out;
  };
  return walk(value, 0) as T;
}
