import { MIN_SECRET_LENGTH, SecretRegistry } from './secret-registry';

describe('SecretRegistry', () => {
  const seeded = () => SecretRegistry.fromConfig({ get: () => 'sk-model-key-0123456789', list: () => ['admin-key-abcdef'] });

  it('is seeded from LLM_API_KEY and API_KEYS and takes later values from other sources', () => {
    const r = seeded();
    expect(r.mask('a sk-model-key-0123456789 b admin-key-abcdef c mcp-token-xyz')).toBe('a [REDACTED] b [REDACTED] c mcp-token-xyz');
    r.set('mcp:fx', ['mcp-token-xyz']);
    expect(r.mask('c mcp-token-xyz')).toBe('c [REDACTED]');
    expect(r.foundIn('…mcp-token-xyz…')).toBe(true);
    // a source's values are replaced, not added to
    r.set('mcp:fx', ['other-token-1']);
    expect(r.foundIn('mcp-token-xyz')).toBe(false);
  });

  it(`leaves out values shorter than ${MIN_SECRET_LENGTH} characters, so ordinary words are never masked`, () => {
    const r = new SecretRegistry();
    r.set('mcp:fx', ['on', '1', 'admin', 'debug', 'long-enough-value']);
    expect(r.values()).toEqual(['long-enough-value']);
    expect(r.mask('admin turned debug on: 1 long-enough-value')).toBe('admin turned debug on: 1 [REDACTED]');
  });

  it('registers the token of an Authorization-style value alone too, and masks the longest value first', () => {
    const r = new SecretRegistry();
    r.set('mcp:remote', ['Bearer tok-123456789', 'tok-12345']);
    expect(r.values()).toEqual(['Bearer tok-123456789', 'tok-123456789', 'tok-12345']);
    expect(r.mask('server said tok-123456789')).toBe('server said [REDACTED]');
  });

  it('masks known values in a structure without touching anything else', () => {
    const r = new SecretRegistry();
    r.set('mcp:fx', ['value-0123456']);
    const v = { password: 'not-known', text: 'x value-0123456 y', list: ['value-0123456'] };
    expect(r.maskKnown(v, JSON.stringify(v))).toEqual({ password: 'not-known', text: 'x [REDACTED] y', list: ['[REDACTED]'] });
    const clean = { a: 'b' };
    expect(r.maskKnown(clean, JSON.stringify(clean))).toBe(clean);
  });
});
