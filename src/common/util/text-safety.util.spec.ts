import fc from 'fast-check';
import { deepMap } from './deep-map.util';
import { redactString } from './redact.util';
import { stripNul, storageSafe } from './text-safety.util';

const SECRET = 'configured-secret-value';

/** What storageSafe gives, by definition: the deep copy with every string made safe. */
function safeCopy(value: unknown, secrets: readonly string[]): unknown {
  return deepMap(value, { maxDepth: 64, leaf: (v) => (typeof v === 'string' ? redactString(stripNul(v), secrets) : v), key: stripNul });
}

/** Strings an event may carry: plain text, and every kind of text that must change. */
const text = fc.oneof(
  { weight: 4, arbitrary: fc.string() },
  fc.string({ unit: 'binary' }),
  fc.constantFrom(SECRET, `see ${SECRET} here`, 'Bearer abcdef123456', 'sk-abcdefghijklmnop', 'a\u0000b', 'x\uD800y', '\uDC00', 'Basic', 'ok 😀'),
);
const value = fc.letrec((tie) => ({
  any: fc.oneof({ depthSize: 'small' }, text, fc.integer(), fc.double(), fc.boolean(), fc.constant(null), fc.constant(undefined), tie('arr'), tie('obj')),
  arr: fc.array(tie('any'), { maxLength: 4 }),
  obj: fc.dictionary(fc.oneof(fc.string(), fc.constantFrom('k\u0000', 'k\uDBFF', '__proto__', 'content')), tie('any'), { maxKeys: 4 }),
})).any;

describe('storageSafe', () => {
  it('gives what the safe deep copy gives, for any value, and masks every secret, NUL and lone surrogate', () => {
    fc.assert(
      fc.property(value, (v) => {
        const out = storageSafe(v, [SECRET]);
        expect(out).toStrictEqual(safeCopy(v, [SECRET]));
        const json = JSON.stringify(out) ?? '';
        expect(json).not.toContain(SECRET);
        expect(json).not.toContain('\\u0000');
        expect(json).not.toMatch(/Bearer abcdef123456|sk-abcdefghijklmnop/);
        expect((json as unknown as { isWellFormed(): boolean }).isWellFormed()).toBe(true);
      }),
      { numRuns: 2000 },
    );
  });

  it('returns a value with nothing to change as it is, and copies one with anything to change', () => {
    const clean = { type: 'tool_progress', tool: 'read_file', params: { path: 'docs/a.md', n: [1, 2, { ok: true }] }, isError: false };
    expect(storageSafe(clean, [SECRET])).toBe(clean);
    for (const dirty of [{ a: [{ b: `x${SECRET}` }] }, { a: { 'k\u0000': 1 } }, { a: ['\uD800'] }, { a: 'Bearer abcdef123456' }]) {
      const out = storageSafe(dirty, [SECRET]);
      expect(out).not.toBe(dirty);
      expect(out).toEqual(safeCopy(dirty, [SECRET]));
    }
  });

  it('walks as deep as the copy does: a string under the 64th level is masked, an object under it is left as it is', () => {
    for (const depth of [63, 64, 65, 66]) {
      let v: unknown = { leaf: `x${SECRET}`, tooDeep: { s: SECRET } };
      for (let i = 0; i < depth; i++) v = { v };
      expect(storageSafe(v, [SECRET])).toStrictEqual(safeCopy(v, [SECRET]));
    }
  });

  it('copies what is not a plain object or array, as the copy always did (a Date, a class instance)', () => {
    class Point {
      constructor(readonly x: number) {}
    }
    const at = new Date(0);
    expect(storageSafe({ at }, [])).toEqual({ at: {} });
    const p = { p: new Point(1) };
    const out = storageSafe(p, []);
    expect(out).not.toBe(p);
    expect(Object.getPrototypeOf(out.p)).toBe(Object.prototype);
    expect(out).toEqual({ p: { x: 1 } });
  });
});
