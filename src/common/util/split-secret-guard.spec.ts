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
});
