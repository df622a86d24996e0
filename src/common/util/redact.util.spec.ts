import fc from 'fast-check';
import { deepMap, WALK } from './deep-map.util';
import { isSecretKey, REDACTED, redactSecrets, redactString } from './redact.util';

const SECRET = 'configured-secret-value';

describe('redactString', () => {
  it('masks bearer tokens, well-known key formats, configured secrets, and replaces NUL', () => {
    expect(redactString('auth: Bearer abcdef123456 ok')).toBe(`auth: Bearer ${REDACTED} ok`);
    expect(redactString('key sk-abcdefghijklmnop end')).toBe(`key ${REDACTED} end`);
    expect(redactString('gsk_abcdefghijklmnop and xai-abcdefghijklmnop')).toBe(`${REDACTED} and ${REDACTED}`);
    expect(redactString(`x${SECRET}y${SECRET}`, [SECRET])).toBe(`x${REDACTED}y${REDACTED}`);
    expect(redactString('a\u0000b')).toBe('a\uFFFDb');
    expect(redactString('plain streamed token ')).toBe('plain streamed token ');
  });

  it('masks every secret or token among random words', () => {
    const piece = fc.constantFrom('Bearer abcdef123456', 'Basic dXNlcjpwYXNz', 'sk-abcdefghijklmnop', 'gsk_abcdefghijklmnop', 'xai-abcdefghijklmnop', SECRET, '\u0000', 'Bear', 'sk-', 'x');
    fc.assert(
      fc.property(fc.array(fc.oneof(fc.string(), piece), { maxLength: 8 }), (parts) => {
        const out = redactString(parts.join(' '), [SECRET]);
        expect(out).not.toContain(SECRET);
        expect(out).not.toContain('\u0000');
        expect(out).not.toMatch(/Bearer abcdef123456|sk-abcdefghijklmnop|gsk_abcdefghijklmnop|xai-abcdefghijklmnop/);
      }),
      { numRuns: 500 },
    );
  });
});

describe('redactSecrets', () => {
  it('masks secret-named keys at any depth and strings inside, without touching the input', () => {
    const input = { usage: { promptTokens: 3 }, headers: { Authorization: 'Bearer abcdef123456' }, nested: [{ api_key: 'k', text: `see ${SECRET}` }] };
    const out = redactSecrets(input, [SECRET]);
    expect(out).toEqual({ usage: { promptTokens: 3 }, headers: { Authorization: REDACTED }, nested: [{ api_key: REDACTED, text: `see ${REDACTED}` }] });
    expect(input.nested[0].api_key).toBe('k');
  });
});

describe('redactSecrets, against its definition as a deepMap walk', () => {
  /** The rules redactSecrets has always had, on the generic walk. */
  const reference = (value: unknown, secrets: readonly string[], extraKeys: ReadonlySet<string>) =>
    deepMap(value, {
      maxDepth: 20,
      tooDeep: () => '[…]',
      repeats: { of: 'any', becomes: '[…]' },
      leaf: (v) => (typeof v === 'string' ? redactString(v, secrets) : v),
      object: (v) => (v instanceof Date ? v.toISOString() : WALK),
      key: (k) => (k.includes('\u0000') ? k.replace(/\u0000/g, '\uFFFD') : k),
      member: (k, x) => (isSecretKey(k) || extraKeys.has(k) ? (x == null ? x : REDACTED) : WALK),
    });
  const text = fc.oneof({ weight: 4, arbitrary: fc.string() }, fc.constantFrom(SECRET, `a ${SECRET} b`, 'Bearer abcdef123456', 'sk-abcdefghijklmnop', 'x\u0000y'));
  const key = fc.oneof({ weight: 3, arbitrary: fc.string({ maxLength: 6 }) }, fc.constantFrom('apiKey', 'password', 'Authorization', 'token', 'pin', 'k\u0000', '__proto__', 'promptTokens'));
  const value = fc.letrec((tie) => ({
    any: fc.oneof({ depthSize: 'small' }, text, fc.integer(), fc.boolean(), fc.constant(null), fc.constant(undefined), fc.date({ noInvalidDate: true }), tie('arr'), tie('obj')),
    arr: fc.array(tie('any'), { maxLength: 4 }),
    obj: fc.dictionary(key, tie('any'), { maxKeys: 4, noNullPrototype: true }),
  })).any;

  it('gives the same copy for any value, with shared and cyclic references and secret-named keys', () => {
    fc.assert(
      fc.property(value, fc.boolean(), (v, link) => {
        // repeats: the same object twice, and (when an object) one member pointing back at the root
        const input = link && v && typeof v === 'object' && !Array.isArray(v) && !(v instanceof Date) ? Object.assign(v, { again: v, twice: [v, v] }) : [v, v];
        const extra = new Set(['pin']);
        expect(redactSecrets(input, [SECRET], extra)).toStrictEqual(reference(input, [SECRET], extra));
        expect(JSON.stringify(redactSecrets(input, [SECRET], extra)) ?? '').not.toContain(SECRET);
      }),
      { numRuns: 2000 },
    );
  });

  it('cuts at the same depth', () => {
    for (const depth of [19, 20, 21, 22]) {
      let v: unknown = { leaf: SECRET };
      for (let i = 0; i < depth; i++) v = i % 2 ? { v } : [v];
      expect(redactSecrets(v, [SECRET])).toStrictEqual(reference(v, [SECRET], new Set()));
    }
  });
});
