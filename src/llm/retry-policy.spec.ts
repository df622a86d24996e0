import { backoffDelay, classifyNetworkError, classifyStatus, DEFAULT_RETRY_POLICY, parseRetryAfter, withRetry } from './retry-policy';
import { LlmError } from './llm-adapter.port';

describe('retry policy', () => {
  describe('parseRetryAfter', () => {
    const now = Date.parse('2026-01-01T00:00:00Z');
    it.each([
      [{ 'retry-after': '3' }, 3000],
      [{ 'Retry-After': '1.5' }, 1500],
      [{ 'retry-after': 'Thu, 01 Jan 2026 00:00:10 GMT' }, 10_000],
      [{ 'retry-after': 'Wed, 31 Dec 2025 23:59:00 GMT' }, 0],
      [{ 'retry-after-ms': '250', 'retry-after': '9' }, 250],
      [{ 'retry-after': 'soon' }, undefined],
      [{}, undefined],
    ])('%j → %s ms', (headers, ms) => {
      expect(parseRetryAfter(headers, now)).toBe(ms);
      expect(parseRetryAfter(new Headers(headers as Record<string, string>), now)).toBe(ms);
    });
  });

  it('caps Retry-After at 30 s and backs off exponentially otherwise', () => {
    const rateLimited = classifyStatus(429, 'slow down', { 'retry-after': '120' });
    expect(backoffDelay(0, rateLimited, DEFAULT_RETRY_POLICY)).toBe(30_000);
    const server = classifyStatus(502, 'bad gateway');
    const mid = () => 0.5; // no jitter
    expect([0, 1, 2].map((n) => backoffDelay(n, server, DEFAULT_RETRY_POLICY, mid))).toEqual([500, 1000, 2000]);
  });

  it.each([
    [429, 'rate_limited', true],
    [500, 'server_error', true],
    [503, 'server_error', true],
    [400, 'bad_request', false],
    [401, 'auth', false],
    [403, 'auth', false],
    [404, 'bad_request', false],
  ] as const)('HTTP %i is %s, retried: %s', (status, code, retry) => {
    expect(classifyStatus(status, 'x')).toMatchObject({ info: { code, status }, retry });
  });

  it('recognises connection errors through cause chains', () => {
    const refused = Object.assign(new TypeError('fetch failed'), { cause: Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }) });
    expect(classifyNetworkError(refused)).toMatchObject({ info: { code: 'network' }, retry: true });
    const dns = Object.assign(new TypeError('fetch failed'), { cause: Object.assign(new Error('getaddrinfo ENOTFOUND x'), { code: 'ENOTFOUND' }) });
    expect(classifyNetworkError(dns)).toMatchObject({ info: { code: 'network' }, retry: false });
    expect(classifyNetworkError(new SyntaxError('Unexpected token'))).toBeUndefined();
  });

  it('withRetry stops at maxRetries and throws the last failure as LlmError', async () => {
    let attempts = 0;
    const err = await withRetry(
      async () => {
        attempts++;
        throw new Error('boom');
      },
      () => classifyStatus(500, 'boom'),
      { policy: { ...DEFAULT_RETRY_POLICY, baseDelayMs: 1 } },
    ).catch((e: unknown) => e);
    expect(attempts).toBe(3);
    expect(err).toBeInstanceOf(LlmError);
    expect((err as LlmError).info.code).toBe('server_error');
  });
});
