import { deepMap, WALK } from '../../common/util/deep-map.util';

/**
 * JSON text of any value, never throwing: plain JSON.stringify when it works; otherwise a copy
 * with cycles as "[Circular]", BigInt as strings and unreadable members as "[Unreadable]".
 * `output` is a JSON-safe value equal to the text (the original when JSON.stringify succeeded).
 */
export function toJsonText(value: unknown): { text: string; output: unknown } {
  try {
    const text = JSON.stringify(value);
    if (typeof text === 'string') return { text, output: value };
    return { text: 'null', output: null };
  } catch {
    try {
      const safe = toJsonSafe(value);
      return { text: JSON.stringify(safe) ?? 'null', output: safe };
    } catch {
      const message = 'the tool output could not be serialized as JSON';
      return { text: JSON.stringify({ error: 'unserializable_output', message }), output: { error: 'unserializable_output', message } };
    }
  }
}

function toJsonSafe(value: unknown): unknown {
  return deepMap(value, {
    maxDepth: 100,
    tooDeep: () => '[…]',
    repeats: { of: 'cycle', becomes: '[Circular]' },
    leaf: (v) => (typeof v === 'bigint' ? v.toString() : typeof v === 'number' ? (Number.isFinite(v) ? v : null) : typeof v === 'function' || typeof v === 'symbol' ? undefined : v),
    object: (v) => {
      const toJSON = (v as { toJSON?: unknown }).toJSON;
      return typeof toJSON === 'function' ? toJSON.call(v) : WALK;
    },
    arrayUndefined: null,
    unreadable: '[Unreadable]',
  });
}
