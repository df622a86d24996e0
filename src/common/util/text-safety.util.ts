import { deepMap } from './deep-map.util';
import { redactString } from './redact.util';

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
 * Deep copy safe to store and stream: NUL replaced and known secret values masked in every
 * string (keys included). Depth-limited; values that need no change are returned as they are.
 */
export function storageSafe<T>(value: T, secrets: readonly string[] = []): T {
  return deepMap(value, { maxDepth: 64, leaf: (v) => (typeof v === 'string' ? redactString(stripNul(v), secrets) : v), key: stripNul }) as T;
}
