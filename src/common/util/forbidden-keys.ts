/**
 * Keys that reach Object.prototype or a constructor when some code later merges or assigns the
 * object (prototype pollution). No route body or tool argument needs them, so they are refused
 * at the edge instead of trusting every consumer to copy safely.
 */
export const FORBIDDEN_KEYS: ReadonlySet<string> = new Set(['__proto__', 'constructor', 'prototype']);

/** The first forbidden key anywhere in a parsed JSON value, with its path; null when there is none. Iterative. */
export function findForbiddenKey(value: unknown): string | null {
  const stack: Array<[unknown, string]> = [[value, '']];
  while (stack.length) {
    const [v, at] = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    const entries = Array.isArray(v) ? v.entries() : Object.entries(v as Record<string, unknown>);
    for (const [k, x] of entries) {
      const where = at ? `${at}.${String(k)}` : String(k);
      if (typeof k === 'string' && FORBIDDEN_KEYS.has(k)) return where;
      stack.push([x, where]);
    }
  }
  return null;
}
