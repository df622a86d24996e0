import fc from 'fast-check';
import { redactString } from './redact.util';
import { SplitSecretGuard } from './split-secret-guard';

const SECRET = 'canary-SECRET-0123456789';

describe('SplitSecretGuard', () => {
  it.each([2, 3, 5, 24])('masks a secret split into %i pieces, and the pieces joined never contain any part of it that ends it', (pieces) => {
    const text = `Your key is ${SECRET}, keep it.`;
    const size = Math.ceil(text.length / pieces);
    const g = new SplitSecretGuard([SECRET]);
    const sent: string[] = [];
    for (let i = 0; i < text.length; i += size) sent.push(g.push(text.slice(i, i + size)));
    sent.push(g.flush());
    const joined = sent.join('');
    expect(joined).not.toContain(SECRET);
    expect(joined).not.toContain('0123456789');
    expect(joined).toMatch(/^Your key is .+, keep it\.$/);
  });

  it('sends text that only looks like the start of a secret once it is clear it is not one', () => {
    const g = new SplitSecretGuard([SECRET]);
    expect(g.push('see canary-')).toBe('see ');
    expect(g.push('birds')).toBe('canary-birds');
    expect(g.push(' and canary-SEC')).toBe(' and ');
    expect(g.flush()).toBe('canary-SEC');
  });

  it('passes text through untouched when no secret is configured', () => {
    const g = new SplitSecretGuard([]);
    expect(g.push('canary-SEC')).toBe('canary-SEC');
    expect(g.flush()).toBe('');
  });
  it('holds back exactly what a plain search over every prefix of every secret would, whatever the text and its splits', () => {
    // the definition: redact held + piece, hold its longest end that is a proper start of a secret
    const reference = (secrets: string[]) => {
      let held = '';
      const kept = secrets.filter((x) => x.length >= 4);
      return {
        push(piece: string): string {
          if (kept.length === 0) return piece;
          const text = redactString(held + piece, kept);
          let hold = 0;
          for (const x of kept) for (let n = Math.min(x.length - 1, text.length); n > hold; n--) if (text.endsWith(x.slice(0, n))) hold = n;
          held = text.slice(text.length - hold);
          return text.slice(0, text.length - hold);
        },
        flush: () => [held, (held = '')][0],
      };
    };
    const chars = fc.constantFrom('a', 'b', 'k', '-', ' ', '\u00e9', '\uD83D\uDE00');
    const word = fc.array(chars, { minLength: 1, maxLength: 12 }).map((a) => a.join(''));
    fc.assert(
      fc.property(fc.array(word, { minLength: 1, maxLength: 3 }), fc.array(word, { maxLength: 12 }), (secrets, pieces) => {
        const g = new SplitSecretGuard(secrets);
        const r = reference(secrets);
        for (const p of pieces) expect(g.push(p)).toBe(r.push(p));
        expect(g.flush()).toBe(r.flush());
      }),
      { numRuns: 3000 },
    );
  });

  it('never lets a secret through, however the text around it is split', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 30 }), fc.string({ maxLength: 30 }), fc.array(fc.nat(60), { maxLength: 8 }), (before, after, cuts) => {
        const text = `${before}${SECRET}${after}`;
        const at = [...new Set(cuts.map((c) => c % (text.length + 1)))].sort((x, y) => x - y);
        const g = new SplitSecretGuard([SECRET]);
        let sent = '';
        let from = 0;
        for (const c of [...at, text.length]) {
          sent += g.push(text.slice(from, c));
          from = c;
        }
        sent += g.flush();
        expect(sent).not.toContain(SECRET);
      }),
      { numRuns: 2000 },
    );
  });
});
