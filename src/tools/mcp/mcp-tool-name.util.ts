import { createHash } from 'node:crypto';

/** The registry's (and most LLM APIs') limit on a function name. */
export const MAX_TOOL_NAME_LENGTH = 64;
export const MCP_NAME_SEPARATOR = '__';

/**
 * `<server>__<tool>`, with every character outside `[A-Za-z0-9_-]` in the tool's name replaced by `_`.
 * Names longer than 64 characters keep their first 55 and end in `_` plus 8 hex digits of a hash of
 * the full name, so two long names that share a prefix stay distinct. Returns undefined for a tool
 * whose name has nothing usable.
 */
export function namespacedToolName(server: string, tool: string): string | undefined {
  const safe = tool.replace(/[^A-Za-z0-9_-]/g, '_');
  if (!/[A-Za-z0-9]/.test(safe)) return undefined;
  const full = `${server}${MCP_NAME_SEPARATOR}${safe}`;
  if (full.length <= MAX_TOOL_NAME_LENGTH) return full;
  const hash = createHash('sha256').update(`${server}\0${tool}`).digest('hex').slice(0, 8);
  return `${full.slice(0, MAX_TOOL_NAME_LENGTH - 9)}_${hash}`;
}
