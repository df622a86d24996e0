import Ajv from 'ajv';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startTestServer, type TestServer } from '../../../test/support/net-test-servers';
import { ToolFailure, type ToolExecutionContext, type ToolProgress } from '../tool-definition';
import { WebSearchTool, type WebSearchResult } from './web-search.tool';

/** A recorded-style SearXNG `format=json` answer (see the fixture for its quirks). */
const FIXTURE = readFileSync(join(__dirname, '../../../test/fixtures/searxng/search-undici-ssrf.json'), 'utf8');

type Output = { query: string; results: WebSearchResult[]; suggestions?: string[]; answers?: string[] };

describe('web_search (SearXNG JSON API on a local server)', () => {
  let server: TestServer;
  let mode: 'ok' | '429' | '403' | '500' | 'garbage' | 'huge' | 'stall' = 'ok';
  const tools: WebSearchTool[] = [];
  const tool = (options: ConstructorParameters<typeof WebSearchTool>[0]) => {
    const t = new WebSearchTool(options);
    tools.push(t);
    return t;
  };
  const progress: ToolProgress[] = [];
  const ctx = (signal = new AbortController().signal): ToolExecutionContext => ({ projectId: 'p', requestId: 'r', signal, progress: (p) => progress.push(p) });
  const failure = async (p: Promise<unknown>): Promise<ToolFailure> => {
    const err = await p.then(() => new Error('expected a failure'), (e: unknown) => e);
    if (!(err instanceof ToolFailure)) throw err;
    return err;
  };

  beforeAll(async () => {
    server = await startTestServer((_req, res) => {
      switch (mode) {
        case 'ok':
          return res.writeHead(200, { 'content-type': 'application/json' }).end(FIXTURE);
        case '429':
          return res.writeHead(429, { 'content-type': 'text/html' }).end('Too Many Requests');
        case '403':
          return res.writeHead(403).end('Forbidden');
        case '500':
          return res.writeHead(500).end('oops');
        case 'garbage':
          return res.writeHead(200, { 'content-type': 'text/html' }).end('<html>not json</html>');
        case 'huge':
          return res.writeHead(200, { 'content-type': 'application/json' }).end(`{"results":[${'{"url":"https://x.example"},'.repeat(100_000)}{}]}`);
        case 'stall':
          return undefined;
      }
    });
  });
  afterAll(async () => {
    await Promise.all(tools.map((t) => t.onModuleDestroy()));
    await server.close();
  });
  beforeEach(() => {
    mode = 'ok';
    progress.length = 0;
  });

  it('publishes an ajv-strict schema with maxResults defaulting to 5', () => {
    const t = tool({});
    const validate = new Ajv({ strict: true, useDefaults: true }).compile(t.parameters);
    const args: Record<string, unknown> = { query: 'x' };
    expect(validate(args)).toBe(true);
    expect(args).toEqual({ query: 'x', maxResults: 5 });
    expect(validate({ query: 'x', maxResults: 0 })).toBe(false);
    expect(validate({ query: 'x', other: 1 })).toBe(false);
  });

  it('is unavailable without SEARXNG_URL', async () => {
    const t = WebSearchTool.fromConfig({ get: () => undefined } as never);
    expect(t.isAvailable()).toBe(false);
    const err = await failure(t.execute({ query: 'x', maxResults: 5 }, ctx()));
    expect(err.outcome).toBe('unavailable');
    tools.push(t);
  });

  it('queries /search?q=…&format=json and maps the results', async () => {
    const t = tool({ searxngUrl: server.origin });
    expect(t.isAvailable()).toBe(true);
    const r = await t.execute({ query: 'undici dns rebinding & ssrf', maxResults: 5 }, ctx());
    expect(server.requests.at(-1)).toBe('/search?q=undici+dns+rebinding+%26+ssrf&format=json');
    const out = r.output as Output;
    expect(out.query).toBe('undici dns rebinding & ssrf');
    expect(out.results.map((x) => x.url)).toEqual([
      'https://undici.nodejs.org/#/docs/api/Agent',
      'https://owasp.org/www-community/attacks/Server_Side_Request_Forgery',
      'https://github.com/nodejs/undici/issues/1314',
      'https://en.wikipedia.org/wiki/DNS_rebinding', // its duplicate from another engine is dropped
      'https://www.npmjs.com/package/ipaddr.js', // the magnet: link before it is skipped
    ]);
    expect(out.results[0]).toEqual({
      title: 'Agent | Undici',
      url: 'https://undici.nodejs.org/#/docs/api/Agent',
      snippet: expect.stringMatching(/^Agent allows dispatching requests against multiple different origins\./),
      engine: 'duckduckgo',
      score: 7.5,
    });
    expect(out.results[2].snippet).toContain('private IP ranges, to mitigate SSRF.');
    expect(out.suggestions).toEqual(['undici ssrf', 'node dns rebinding protection', 'ssrf filter npm']);
    expect(r.sources).toHaveLength(5);
    expect(r.sources?.[1]).toEqual({
      type: 'web',
      title: 'Server Side Request Forgery | OWASP Foundation',
      url: 'https://owasp.org/www-community/attacks/Server_Side_Request_Forgery',
      snippet: expect.stringContaining('Server-Side Request Forgery (SSRF)'),
      engine: 'brave',
    });
    expect(progress).toEqual([{ stage: 'searching', message: 'Searching the web…', metadata: { query: 'undici dns rebinding & ssrf' } }]);
  });

  it('caps at maxResults and titles an untitled result with its URL', async () => {
    const t = tool({ searxngUrl: `${server.origin}/` });
    expect(((await t.execute({ query: 'q', maxResults: 2 }, ctx())).output as Output).results).toHaveLength(2);
    const seven = ((await t.execute({ query: 'q', maxResults: 7 }, ctx())).output as Output).results;
    expect(seven).toHaveLength(7);
    expect(seven[5]).toMatchObject({ title: 'https://blog.example.org/2025/ssrf-in-node' });
  });

  it('keeps a path prefix in SEARXNG_URL', async () => {
    await tool({ searxngUrl: `${server.origin}/searxng` }).execute({ query: 'q', maxResults: 1 }, ctx());
    expect(server.requests.at(-1)).toBe('/searxng/search?q=q&format=json');
  });

  it.each([
    ['429', 'rate_limited', 'HTTP 429'],
    ['403', 'unavailable', 'search.formats'],
    ['500', 'exception', 'HTTP 500'],
    ['garbage', 'exception', 'invalid JSON'],
    ['huge', 'exception', 'exceeded 65536 bytes'],
  ] as const)('maps a %s answer to %s', async (m, outcome, message) => {
    mode = m;
    const err = await failure(tool({ searxngUrl: server.origin, maxBytes: 65_536 }).execute({ query: 'q', maxResults: 5 }, ctx()));
    expect(err.outcome).toBe(outcome);
    expect(err.message).toContain(message);
  });

  it('times out', async () => {
    mode = 'stall';
    const err = await failure(tool({ searxngUrl: server.origin, timeoutMs: 200 }).execute({ query: 'q', maxResults: 5 }, ctx()));
    expect(err).toMatchObject({ outcome: 'timeout', message: 'SearXNG did not answer within 200 ms' });
  });

  it("honours the caller's AbortSignal", async () => {
    mode = 'stall';
    const ac = new AbortController();
    setTimeout(() => ac.abort(new Error('cancelled by test')), 50);
    await expect(tool({ searxngUrl: server.origin }).execute({ query: 'q', maxResults: 5 }, ctx(ac.signal))).rejects.toThrow('cancelled by test');
  });

  it('refuses a blank query', async () => {
    const err = await failure(tool({ searxngUrl: server.origin }).execute({ query: '   ', maxResults: 5 }, ctx()));
    expect(err.outcome).toBe('validation_error');
  });
});
