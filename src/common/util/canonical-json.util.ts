import canonicalizeImport from 'canonicalize';

/**
 * RFC 8785 (JCS) canonical JSON via the `canonicalize` package: object keys sorted by UTF-16
 * code units at every depth, no whitespace, numbers in ECMAScript shortest form, strings
 * escaped exactly as JSON.stringify does (never normalized: "é" and "e\u0301" stay different).
 *
 * `canonicalize` is a CommonJS module (`module.exports = fn`) whose typings say
 * `export default`. With esModuleInterop both tsc (module nodenext, CJS output) and Jest's
 * swc transform hand us the function as the default import; the fallback below keeps this
 * working if a build ever imports the namespace object instead.
 */
type Canonicalize = (input: unknown) => string | undefined;
const canonicalize: Canonicalize =
  typeof canonicalizeImport === 'function'
    ? (canonicalizeImport as Canonicalize)
    : ((canonicalizeImport as unknown as { default: Canonicalize }).default);

/**
 * Canonical JSON text of a JSON value. Throws on values JSON cannot represent (NaN, Infinity,
 * BigInt) and on cycles; callers pass data that came out of JSON.parse.
 * `undefined` members are dropped like JSON.stringify drops them; a top-level `undefined` is "null".
 */
export function canonicalJson(value: unknown): string {
  return canonicalize(value) ?? 'null';
}
