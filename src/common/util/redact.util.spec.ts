import fc from 'fast-check';
import { REDACTED, redactSecrets, redactString } from './redact.util';

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
