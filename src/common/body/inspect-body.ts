/** Deeper JSON than any route accepts; deeper bodies are refused before validation recurses into them. */
export const MAX_BODY_DEPTH = 64;

/**
 * One walk over a parsed JSON body: whether it nests deeper than `limit`, and whether any string
 * or key holds U+0000 (PostgreSQL cannot store it). Iterative, so a hostile body cannot overflow
 * the stack; stops at the first problem.
 */
export function inspectBody(value: unknown, limit: number): { tooDeep: boolean; hasNul: boolean } {
  const stack: Array<[unknown, number]> = [[value, 1]];
  while (stack.length) {
    const [v, d] = stack.pop()!;
    if (typeof v === 'string') {
      if (v.includes('\u0000')) return { tooDeep: false, hasNul: true };
      continue;
    }
    if (v === null || typeof v !== 'object') continue;
    if (d > limit) return { tooDeep: true, hasNul: false };
    for (const [k, x] of Array.isArray(v) ? v.entries() : Object.entries(v as Record<string, unknown>)) {
      if (typeof k === 'string' && k.includes('\u0000')) return { tooDeep: false, hasNul: true };
      stack.push([x, d + 1]);
    }
  }
  return { tooDeep: false, hasNul: false };
}
