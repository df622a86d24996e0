import { canonicalJson } from '../common/util/canonical-json.util';
import { jsonDepth, MAX_JSON_DEPTH } from '../common/util/json-depth.util';

/**
 * Tool-call arguments and canonical signatures (docs/API.md "Built-in tools").
 *
 * The signature of a call is the canonical JSON array `[name, action, args, projectId]` where
 * `args` has its keys sorted recursively and the schema's defaults applied, with no whitespace.
 * A JSON array needs no separator that could be confused with content, and stays readable in
 * traces and checkpoints: `["read_file","",{"maxBytes":65536,"path":"a.md"},"default"]`.
 * Key order, JSON spacing and omitted defaults do not change it; any other difference does.
 */

/** Longest `arguments` string accepted (characters); a model never needs more. */
export const MAX_ARGUMENT_CHARS = 1_000_000;
/** Deepest nesting accepted; deeper input would only exhaust recursive walkers downstream. */
export const MAX_ARGUMENT_DEPTH = 64;

export type ParsedArguments = { ok: true; value: Record<string, unknown> } | { ok: false; message: string };

/**
 * Parses a call's arguments into a fresh plain JSON object (callers may mutate it).
 *
 * - A string must parse to a JSON **object**. `[1]`, `"x"`, `null`, `42`, `true` and truncated
 *   JSON are refused, never coerced to `{}`.
 * - The empty string (or only whitespace) is read as `{}`: OpenAI-compatible models send
 *   `"arguments": ""` for tools called without arguments, and that is the only such leniency.
 * - An object is deep-copied through JSON, so it holds JSON values only (cycles and BigInt are refused).
 */
export function parseToolArguments(raw: unknown): ParsedArguments {
  let value: unknown;
  if (typeof raw === 'string') {
    if (raw.length > MAX_ARGUMENT_CHARS) return { ok: false, message: `arguments are longer than ${MAX_ARGUMENT_CHARS} characters` };
    if (raw.trim() === '') return { ok: true, value: {} };
    if (jsonDepth(raw) > MAX_JSON_DEPTH) return { ok: false, message: `arguments are nested deeper than ${MAX_JSON_DEPTH} levels` };
    try {
      value = JSON.parse(raw);
    } catch (err) {
      return { ok: false, message: `arguments are not valid JSON (${(err as Error).message}); send one JSON object` };
    }
  } else if (raw !== null && typeof raw === 'object' && !Array.isArray(raw)) {
    try {
      const text = JSON.stringify(raw);
      if (text.length > MAX_ARGUMENT_CHARS) return { ok: false, message: `arguments are longer than ${MAX_ARGUMENT_CHARS} characters` };
      if (jsonDepth(text) > MAX_JSON_DEPTH) return { ok: false, message: `arguments are nested deeper than ${MAX_JSON_DEPTH} levels` };
      value = JSON.parse(text);
    } catch (err) {
      return { ok: false, message: `arguments are not JSON-serializable (${(err as Error).message})` };
    }
  } else {
    return { ok: false, message: `arguments must be a JSON object, got ${describeJsonType(raw)}` };
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    return { ok: false, message: `arguments must be a JSON object, got ${describeJsonType(value)}` };
  }
  if (depthExceeds(value, MAX_ARGUMENT_DEPTH)) {
    return { ok: false, message: `arguments are nested deeper than ${MAX_ARGUMENT_DEPTH} levels` };
  }
  return { ok: true, value: value as Record<string, unknown> };
}

export interface SignatureParts {
  name: string;
  /** the definition's `action` (e.g. an MCP method); '' when it has none */
  action?: string;
  /** parsed arguments with defaults applied */
  args: Record<string, unknown>;
  projectId: string;
}

/** `canonicalJson([name, action, args, projectId])`; throws only on non-JSON args (NaN, cycles). */
export function toolSignature(parts: SignatureParts): string {
  return canonicalJson([parts.name, parts.action ?? '', parts.args, parts.projectId]);
}

function describeJsonType(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  return typeof v === 'object' ? 'an object' : `a ${typeof v}`;
}

/** Iterative, so hostile nesting cannot overflow the stack here. */
function depthExceeds(root: unknown, max: number): boolean {
  const stack: Array<[unknown, number]> = [[root, 1]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    if (depth > max) return true;
    for (const child of Object.values(v as object)) stack.push([child, depth + 1]);
  }
  return false;
}
