/**
 * Deepest nesting a tool's arguments may have. The walks that follow parsing (schema
 * validation, canonical JSON, the storage-safe copy) recurse, so a model that sends
 * `[[[[…]]]]` 100,000 levels deep would overflow the stack; it gets a clear invalid_args instead.
 */
export const MAX_JSON_DEPTH = 64;

/**
 * Nesting depth of a JSON text, counted in one pass without recursion (brackets inside strings,
 * escapes included, are skipped). Stops counting at `limit + 1`. No JSON library exposes a
 * depth limit for JSON.parse, and this scan is linear and allocation-free.
 */
export function jsonDepth(text: string, limit = MAX_JSON_DEPTH): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > max && (max = depth) > limit) return max;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return max;
}
