import Ajv from 'ajv';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { gzipSync } from 'node:zlib';
import { startTestServer, type TestServer } from '../../../test/support/net-test-servers';
import { ToolFailure, type ToolExecutionContext, type ToolProgress } from '../tool-definition';
import { FetchPagesBatchTool, FetchPageTool, type BatchEntry, type FetchedPage } from './fetch-page.tool';
import { waitFor } from '../../../test/support/wait-for';

const ARTICLE = `<!doctype html><html><head><title>Harvest Report</title>
<meta name="description" content="What the colony harvested this autumn."></head>
<body><nav>Home | About</nav><article><h1>Harvest Report</h1>
${Array.from({ length: 6 }, (_, i) => `<p>Field ${i + 1} gave forty sacks of barley, stored in the north silo before the frost.</p>`).join('')}
</article><script>alert('x')</script></body></html>`;

/** Streams `total` bytes of HTML in 64 KiB chunks, honouring backpressure; records whether it finished. */
function stream(res: ServerResponse, total: number, state: { finished: boolean; closed: boolean }) {
  const chunk = Buffer.from(`<p>${'lorem ipsum dolor sit amet '.repeat(2400)}</p>\n`.slice(0, 65_536));
  let sent = 0;
  res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
  res.on('close', () => (state.closed = true));
  const pump = () => {
    while (sent < total) {
      sent += chunk.length;
      if (!res.write(chunk)) return void res.once('drain', pump);
    }
    state.finished = true;
    res.end();
  };
  pump();
}

describe('fetch_page and fetch_pages_batch (local servers, allow-listed)', () => {
  let server: TestServer;
  let page: FetchPageTool;
  let batch: FetchPagesBatchTool;
  const huge = { finished: false, closed: false };
  const endless = { finished: false, closed: false };
  const slow = { inFlight: 0, max: 0 };

  const routes: Record<string, (req: IncomingMessage, res: ServerResponse) => void> = {
    '/article': (_q, r) => r.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(ARTICLE),
    '/plain': (_q, r) => r.writeHead(200, { 'content-type': 'text/plain' }).end('line one   \r\nline two\n\n\n\nend'),
    '/readme.md': (_q, r) => r.writeHead(200, { 'content-type': 'text/markdown' }).end('# Roadmap\n\n- ship fetch_page\n'),
    '/data.json': (_q, r) => r.writeHead(200, { 'content-type': 'application/vnd.api+json' }).end('{"colony":"north","pawns":3}'),
    '/huge': (_q, r) => stream(r, 10 * 1024 * 1024, huge),
    '/endless': (_q, r) => stream(r, Number.MAX_SAFE_INTEGER, endless),
    '/stall': () => undefined,
    '/stall-body': (_q, r) => {
      r.writeHead(200, { 'content-type': 'text/plain' });
      r.write('partial…');
    },
    '/limited': (_q, r) => r.writeHead(429, { 'retry-after': '30' }).end('slow down'),
    '/missing': (_q, r) => r.writeHead(404, { 'content-type': 'text/html' }).end('<h1>Not here</h1>'),
    '/pdf': (_q, r) => r.writeHead(200, { 'content-type': 'application/pdf' }).end('%PDF-1.7'),
    '/no-type-binary': (_q, r) => r.end(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 0, 0, 0x0d])),
    '/gzip': (_q, r) => r.writeHead(200, { 'content-type': 'text/html', 'content-encoding': 'gzip' }).end(gzipSync(ARTICLE)),
    '/latin1': (_q, r) => r.writeHead(200, { 'content-type': 'text/plain; charset=iso-8859-1' }).end(Buffer.from([0x63, 0x61, 0x66, 0xe9])),
    '/meta-charset': (_q, r) =>
      r.writeHead(200, { 'content-type': 'text/html' }).end(Buffer.concat([Buffer.from('<html><head><meta charset="windows-1252"><title>Price</title></head><body><p>'), Buffer.from([0x80, 0x35]), Buffer.from('</p></body></html>')])),
    '/moved': (_q, r) => r.writeHead(301, { location: '/article' }).end(),
    '/slow': (_q, r) => {
      slow.max = Math.max(slow.max, ++slow.inFlight);
      setTimeout(() => {
        slow.inFlight--;
        r.writeHead(200, { 'content-type': 'text/plain' }).end('slow page');
      }, 150);
    },
  };

  const progress: ToolProgress[] = [];
  const ctx = (signal = new AbortController().signal): ToolExecutionContext => ({
    projectId: 'p',
    requestId: 'r',
    signal,
    progress: (p) => progress.push(p),
  });
  const failure = async (p: Promise<unknown>): Promise<ToolFailure> => {
    const err = await p.then(() => new Error('expected a failure'), (e: unknown) => e);
    if (!(err instanceof ToolFailure)) throw err;
    return err;
  };

  beforeAll(async () => {
    server = await startTestServer((req, res) => (routes[new URL(req.url ?? '/', 'http://x').pathname] ?? ((_q, r) => r.writeHead(404).end()))(req, res));
    page = new FetchPageTool({ allowHosts: [server.hostPort], timeoutMs: 5_000 });
    batch = new FetchPagesBatchTool({ allowHosts: [server.hostPort], timeoutMs: 5_000 });
  });
  afterAll(async () => {
    await Promise.all([page.onModuleDestroy(), batch.onModuleDestroy()]);
    await server.close();
  });
  beforeEach(() => (progress.length = 0));

  it('publishes ajv-strict schemas that match docs/API.md', () => {
    const ajv = new Ajv({ strict: true, useDefaults: true });
    const one = ajv.compile(page.parameters);
    expect(one({ url: 'https://example.com', maxChars: 500 })).toBe(true);
    expect(one({ url: 'https://example.com', extra: 1 })).toBe(false);
    const many = ajv.compile(batch.parameters);
    expect(many({ urls: ['https://a.example'] })).toBe(true);
    expect(many({ urls: Array.from({ length: 9 }, (_, i) => `https://${i}.example`) })).toBe(false);
    expect(many({ urls: [] })).toBe(false);
    expect([page.name, batch.name, page.origin]).toEqual(['fetch_page', 'fetch_pages_batch', 'builtin']);
    expect([page.timeoutMs, batch.timeoutMs]).toEqual([10_000, 20_000]); // ToolRunner's deadline outlives the fetcher's
  });

  it('returns an HTML page as readable text, with a source and progress', async () => {
    const r = await page.execute({ url: `${server.origin}/article` }, ctx());
    const out = r.output as FetchedPage;
    expect(out).toMatchObject({ url: `${server.origin}/article`, finalUrl: `${server.origin}/article`, status: 200, title: 'Harvest Report', truncated: false, contentType: 'text/html' });
    expect(out.text).toContain('Field 6 gave forty sacks of barley');
    expect(out.text).not.toContain("alert('x')");
    expect(r.isError).toBe(false);
    expect(r.sources).toEqual([{ type: 'web', title: 'Harvest Report', url: `${server.origin}/article`, snippet: 'What the colony harvested this autumn.' }]);
    expect(progress).toEqual([{ stage: 'fetching', message: `Fetching ${server.hostPort}…`, metadata: { url: `${server.origin}/article` } }]);
  });

  it.each([
    ['/plain', 'text/plain', 'line one\nline two\n\nend', ''],
    ['/readme.md', 'text/markdown', '# Roadmap\n\n- ship fetch_page', 'Roadmap'],
    ['/data.json', 'application/vnd.api+json', '{"colony":"north","pawns":3}', ''],
    ['/latin1', 'text/plain', 'café', ''],
  ])('returns %s (%s) as text', async (path, contentType, text, title) => {
    const out = (await page.execute({ url: `${server.origin}${path}` }, ctx())).output as FetchedPage;
    expect(out).toMatchObject({ contentType, text, title: title || server.hostPort, truncated: false });
  });

  it('decompresses gzip and honours <meta charset>', async () => {
    expect(((await page.execute({ url: `${server.origin}/gzip` }, ctx())).output as FetchedPage).title).toBe('Harvest Report');
    expect(((await page.execute({ url: `${server.origin}/meta-charset` }, ctx())).output as FetchedPage).text).toBe('€5');
  });

  it('follows a redirect and reports the final URL', async () => {
    const out = (await page.execute({ url: `${server.origin}/moved` }, ctx())).output as FetchedPage;
    expect(out).toMatchObject({ url: `${server.origin}/moved`, finalUrl: `${server.origin}/article`, title: 'Harvest Report' });
  });

  it('stops a 10 MB body at the byte cap and marks it truncated', async () => {
    const r = await page.execute({ url: `${server.origin}/huge`, maxChars: 5_000 }, ctx());
    const out = r.output as FetchedPage;
    expect(out.truncated).toBe(true);
    expect(out.text.length).toBeLessThanOrEqual(5_000);
    await waitFor(() => huge.closed, { what: 'the server to see the oversized page cut' }); // loopback buffers may have taken the rest; the endless case proves the cut
  });

  it('stops an endless body too (the transfer is cut, not drained)', async () => {
    const out = (await page.execute({ url: `${server.origin}/endless` }, ctx())).output as FetchedPage;
    expect(out.truncated).toBe(true);
    await waitFor(() => endless.closed, { what: 'the server to see the endless page cut' });
  });

  it.each(['/stall', '/stall-body'])('times out on %s', async (path) => {
    const quick = new FetchPageTool({ allowHosts: [server.hostPort], timeoutMs: 300 });
    try {
      const err = await failure(quick.execute({ url: `${server.origin}${path}` }, ctx()));
      expect(err.outcome).toBe('timeout');
      expect(err.message).toBe(`Timed out after 300 ms fetching ${server.origin}${path}`);
    } finally {
      await quick.onModuleDestroy();
    }
  });

  it("honours the caller's AbortSignal (cancel, ToolRunner timeout)", async () => {
    const ac = new AbortController();
    setTimeout(() => ac.abort(new Error('cancelled by test')), 50);
    await expect(page.execute({ url: `${server.origin}/stall` }, ctx(ac.signal))).rejects.toThrow('cancelled by test');
  });

  it('maps HTTP 429 to rate_limited', async () => {
    const err = await failure(page.execute({ url: `${server.origin}/limited` }, ctx()));
    expect(err.outcome).toBe('rate_limited');
    expect(err.details).toMatchObject({ reason: 'rate_limited', retryAfter: '30', status: 429 });
  });

  it('returns a 404 page as an error result without a source', async () => {
    const r = await page.execute({ url: `${server.origin}/missing` }, ctx());
    expect(r).toMatchObject({ isError: true, sources: [], output: { status: 404, text: 'Not here', error: `HTTP 404 from ${server.hostPort}` } });
  });

  it.each([
    ['/pdf', 'Unsupported content type application/pdf'],
    ['/no-type-binary', 'no Content-Type and the body is binary'],
  ])('refuses %s as unsupported content', async (path, message) => {
    const err = await failure(page.execute({ url: `${server.origin}${path}` }, ctx()));
    expect(err.outcome).toBe('validation_error');
    expect(err.message).toContain(message);
  });

  it('maps a refused connection to exception', async () => {
    const closed = await startTestServer(() => undefined);
    const port = closed.port;
    await closed.close();
    const tool = new FetchPageTool({ allowHosts: [`127.0.0.1:${port}`] });
    try {
      const err = await failure(tool.execute({ url: `http://127.0.0.1:${port}/` }, ctx()));
      expect(err.outcome).toBe('exception');
      expect(err.message).toMatch(/^Could not fetch http:\/\/127\.0\.0\.1:\d+\/: .*ECONNREFUSED/);
    } finally {
      await tool.onModuleDestroy();
    }
  });

  it('batch: one result per URL in order; failures do not fail the batch', async () => {
    const urls = [`${server.origin}/article`, `${server.origin}/missing`, 'http://127.0.0.1:1/', `${server.origin}/pdf`, `${server.origin}/plain`];
    const r = await batch.execute({ urls }, ctx());
    const out = r.output as { results: BatchEntry[]; succeeded: number; failed: number };
    expect(out.results.map((e) => [e.ok, e.ok ? e.title : e.outcome])).toEqual([
      [true, 'Harvest Report'],
      [false, 'exception'],
      [false, 'validation_error'],
      [false, 'validation_error'],
      [true, server.hostPort],
    ]);
    expect(out.results[2]).toMatchObject({ url: 'http://127.0.0.1:1/', error: expect.stringMatching(/^Refused: http:\/\/127\.0\.0\.1:1\/ resolves to a loopback address/) });
    expect(out).toMatchObject({ succeeded: 2, failed: 3 });
    expect(r.isError).toBe(false);
    expect(r.sources?.map((s) => s.url)).toEqual([`${server.origin}/article`, `${server.origin}/plain`]);
    expect(progress.map((p) => p.message)).toEqual([1, 2, 3, 4, 5].map((i) => `Fetching page ${i} of 5…`));
  });

  it('batch: at most 4 fetches at once', async () => {
    slow.max = 0;
    const urls = Array.from({ length: 8 }, (_, i) => `${server.origin}/slow?i=${i}`);
    const out = (await batch.execute({ urls }, ctx())).output as { succeeded: number };
    expect(out.succeeded).toBe(8);
    expect(slow.max).toBeLessThanOrEqual(4);
    expect(slow.max).toBeGreaterThanOrEqual(2);
  });

  it('batch: all failing is an error result, still with every entry', async () => {
    const r = await batch.execute({ urls: ['file:///etc/passwd', 'http://169.254.169.254/'] }, ctx());
    expect(r.isError).toBe(true);
    expect((r.output as { failed: number }).failed).toBe(2);
  });

  it('builds from configuration', async () => {
    const config = { list: (key: string) => (key === 'FETCH_ALLOW_HOSTS' ? [server.hostPort] : []) };
    const tool = FetchPageTool.fromConfig(config as never);
    try {
      expect(((await tool.execute({ url: `${server.origin}/plain` }, ctx())).output as FetchedPage).status).toBe(200);
      expect(tool.isAvailable()).toBe(true);
    } finally {
      await tool.onModuleDestroy();
    }
  });
});

describe('fetch deadline from TOOL_TIMEOUT_MS', () => {
  it('follows the configured tool timeout (1 to 15 s)', () => {
    const { fetchDeadlineMs } = jest.requireActual('./fetch-page.tool') as typeof import('./fetch-page.tool');
    const cfg = (ms: number) => ({ list: () => [], get: (() => ms) as never });
    expect(fetchDeadlineMs(cfg(3000))).toBe(2000);
    expect(fetchDeadlineMs(cfg(30000))).toBe(15000);
    expect(fetchDeadlineMs(cfg(500))).toBe(1000);
    expect(fetchDeadlineMs({ list: () => [] })).toBeUndefined();
  });
});
