import { isIP } from 'node:net';
import { startCanary, startTestServer, type Canary, type TestServer } from '../../../test/support/net-test-servers';
import { FetchPageTool } from '../builtins/fetch-page.tool';
import { ToolFailure, type ToolExecutionContext } from '../tool-definition';
import { systemResolver, type HostResolver } from '../../common/net/guarded-dispatcher';

/**
 * The SSRF corpus: ~100 ways to point fetch_page at something it must not reach. Every one
 * must be refused (validation_error) and the loopback canary must see no connection at all:
 * refusing after connecting would already be too late.
 */

/** Names this spec "owns" in DNS (there is no network here); anything else goes to the system. */
const FAKE_DNS: Record<string, string[]> = {
  'rebind.test': ['127.0.0.1'],
  '127.0.0.1.nip.io': ['127.0.0.1'],
  'localtest.me': ['127.0.0.1'],
  'v6loop.test': ['::1'],
  'mapped.test': ['::ffff:127.0.0.1'],
  'mixed.test': ['93.184.216.34', '127.0.0.1'],
  'ten.test': ['10.0.0.1'],
  'metadata.google.internal': ['169.254.169.254'],
};
const fakeResolver: HostResolver = async (host) =>
  FAKE_DNS[host] ? FAKE_DNS[host].map((address) => ({ address, family: isIP(address) })) : systemResolver(host);

/** `P` is replaced by the canary's port. */
const CORPUS: string[] = [
  // IPv4 loopback literals in every spelling WHATWG URL (or getaddrinfo) accepts
  'http://127.0.0.1:P/', 'http://127.1:P/', 'http://127.0.1:P/', 'http://2130706433:P/', 'http://0x7f000001:P/',
  'http://0x7f.1:P/', 'http://0x7F.0x0.0x0.0x1:P/', 'http://0177.0.0.1:P/', 'http://0177.0000.0000.0001:P/',
  'http://017700000001:P/', 'http://127.000.000.001:P/', 'http://127.0.0.1.:P/', 'http://%31%32%37.0.0.1:P/',
  'http://127.0.0.2:P/', 'http://127.255.255.254:P/', 'http://①②⑦.⓪.⓪.①:P/', 'http://１２７．０．０．１:P/',
  'HTTP://127.0.0.1:P/', 'https://127.0.0.1:P/', 'http://127.0.0.1:P/%2e%2e/admin', 'http://127.0.0.1:P#@example.com/',
  'http://127.0.0.1:P\\@example.com/', ' http://127.0.0.1:P/ ', 'http://127.0.0.1:P/\t', 'http:/\\127.0.0.1:P/',
  'http:127.0.0.1:P/',
  // unspecified
  'http://0.0.0.0:P/', 'http://0:P/', 'http://0x0:P/', 'http://000.000.000.000:P/', 'http://[::]:P/',
  'http://[0:0:0:0:0:0:0:0]:P/',
  // names
  'http://localhost:P/', 'http://localhost.:P/', 'http://LOCALHOST:P/', 'http://LocalHost.:P/', 'http://foo.localhost:P/',
  'http://rebind.test:P/', 'http://127.0.0.1.nip.io:P/', 'http://localtest.me:P/', 'http://v6loop.test:P/',
  'http://mapped.test:P/', 'http://mixed.test:P/', 'http://ten.test:P/',
  // IPv6 loopback and IPv4-in-IPv6
  'http://[::1]:P/', 'http://[0:0:0:0:0:0:0:1]:P/', 'http://[0000:0000:0000:0000:0000:0000:0000:0001]:P/',
  'http://[::ffff:127.0.0.1]:P/', 'http://[::ffff:7f00:1]:P/', 'http://[0:0:0:0:0:ffff:127.0.0.1]:P/',
  'http://[::127.0.0.1]:P/', 'http://[::ffff:0:127.0.0.1]:P/', 'http://[64:ff9b::127.0.0.1]:P/', 'http://[2002:7f00:1::]:P/',
  'http://[2001:0:4136:e378:8000:63bf:80ff:fffe]:P/', 'http://[::ffff:0.0.0.0]:P/', 'http://[::ffff:10.0.0.1]:P/',
  // cloud metadata
  'http://169.254.169.254/latest/meta-data/', 'http://169.254.169.254:P/', 'http://0xa9fea9fe/', 'http://2852039166/',
  'http://0251.0376.0251.0376/', 'http://169.254.43518/', 'http://[::ffff:169.254.169.254]/', 'http://[::ffff:a9fe:a9fe]/',
  'http://[fd00:ec2::254]/latest/meta-data/', 'http://100.100.100.200/latest/meta-data/', 'http://[64:ff9b::a9fe:a9fe]/',
  'http://168.63.129.16/machine', 'http://192.0.0.192/opc/v2/instance/', 'http://metadata.google.internal/computeMetadata/v1/',
  // private and special-purpose IPv4
  'http://10.0.0.1:P/', 'http://10.255.255.255/', 'http://167772161/', 'http://172.16.0.1/', 'http://172.31.255.254/',
  'http://192.168.0.1/', 'http://0xc0a80001/', 'http://192.168.1.1:P/', 'http://100.64.0.1/', 'http://100.127.255.254/',
  'http://169.254.0.1/', 'http://224.0.0.1/', 'http://239.255.255.250:1900/', 'http://255.255.255.255/', 'http://240.0.0.1/',
  'http://192.0.2.1/', 'http://198.51.100.7/', 'http://203.0.113.9/', 'http://198.18.0.1/', 'http://198.19.255.254/',
  'http://192.0.0.8/', 'http://192.88.99.1/', 'http://0.1.2.3/',
  // private and special-purpose IPv6
  'http://[fe80::1]/', 'http://[fc00::1]/', 'http://[fd12:3456:789a::1]/', 'http://[fec0::1]/', 'http://[ff02::1]/',
  'http://[ff05::1:3]/', 'http://[2001:db8::1]/', 'http://[100::1]/', 'http://[2001:2::1]/', 'http://[64:ff9b:1::a00:1]/',
  'http://[2002:a00:1::]/', 'http://[2002:c0a8:101::1]/', 'http://[::ffff:192.168.1.1]/', 'http://[3fff::1]/', 'http://[1::1]/',
  // schemes other than http(s)
  'file:///etc/passwd', 'file://localhost/etc/passwd', 'ftp://127.0.0.1:P/', 'gopher://127.0.0.1:P/_GET%20/', 'data:text/html,<h1>x</h1>',
  'javascript:alert(1)', 'ws://127.0.0.1:P/', 'wss://example.com/', 'dict://127.0.0.1:P/info', 'ldap://127.0.0.1:P/',
  'sftp://127.0.0.1:P/', 'tftp://127.0.0.1:P/x', 'jar:http://127.0.0.1:P/x.jar!/', 'blob:http://127.0.0.1:P/uuid', 'about:blank',
  'view-source:http://127.0.0.1:P/', 'mailto:a@example.com', 'chrome://settings',
  // credentials (refused, never stripped) and unparseable input
  'http://user:pass@127.0.0.1:P/', 'http://example.com@127.0.0.1:P/', 'http://127.0.0.1:P@example.com/',
  '127.0.0.1:P', '//127.0.0.1:P/', 'http://[::1:P/', 'http://127.0.0.1:99999/', 'http://[::1%25lo]:P/', '',
];

const ctx = (): ToolExecutionContext => ({ projectId: 'p', requestId: 'r', signal: new AbortController().signal });

async function refusal(tool: FetchPageTool, url: string): Promise<ToolFailure> {
  const err = await tool.execute({ url }, ctx()).then(
    (r) => new Error(`fetched ${url}: ${JSON.stringify(r.output).slice(0, 200)}`),
    (e: unknown) => e,
  );
  if (!(err instanceof ToolFailure)) throw err;
  return err;
}

describe('blocked URL corpus (fetch_page)', () => {
  let canary: Canary;
  let tool: FetchPageTool;

  beforeAll(async () => {
    canary = await startCanary();
    // an unrelated allow-list entry: the corpus must be refused with a non-empty list too
    tool = new FetchPageTool({ allowHosts: ['127.0.0.1:1'], resolver: fakeResolver, timeoutMs: 3_000 });
  });
  afterAll(async () => {
    await tool.onModuleDestroy();
    await canary.close();
  });

  it('holds about a hundred distinct forms', () => {
    expect(new Set(CORPUS).size).toBe(CORPUS.length);
    expect(CORPUS.length).toBeGreaterThanOrEqual(100);
  });

  it.each(CORPUS.map((u) => [u]))('refuses %j', async (template) => {
    const url = template.replace(/:P\b/g, `:${canary.port}`);
    const err = await refusal(tool, url);
    expect(err.outcome).toBe('validation_error');
    expect(err.message).toMatch(/^(Refused: |Invalid URL)/);
    expect(canary.hits()).toBe(0);
  });

  it('names the URL and the range in the message', async () => {
    const err = await refusal(tool, `http://2130706433:${canary.port}/x`);
    expect(err.message).toBe(`Refused: http://127.0.0.1:${canary.port}/x resolves to a loopback address (127.0.0.1)`);
    const mapped = await refusal(tool, 'http://[::ffff:169.254.169.254]/');
    expect(mapped.message).toContain('cloud metadata address (169.254.169.254 embedded in IPv4-mapped');
    const named = await refusal(tool, `http://rebind.test:${canary.port}/`);
    expect(named.message).toMatch(/^Refused: http:\/\/rebind\.test:\d+\/ resolves to a loopback address \(127\.0\.0\.1\)$/);
  });

  it('left the canary untouched', () => {
    expect(canary.hits()).toBe(0);
    expect(canary.requests).toEqual([]);
  });
});

describe('redirects out of an allow-listed server', () => {
  let canary: Canary;
  let origin: TestServer;
  let tool: FetchPageTool;

  beforeAll(async () => {
    canary = await startCanary();
    origin = await startTestServer((req, res) => {
      const u = new URL(req.url ?? '/', 'http://x');
      if (u.pathname === '/to') {
        res.writeHead(Number(u.searchParams.get('status') ?? 302), { location: u.searchParams.get('target') ?? '/' });
        return res.end();
      }
      const hops: Record<string, [number, string]> = {
        '/hop1': [301, '/hop2'],
        '/hop2': [307, '/hop3'],
        '/hop3': [308, `http://localhost:${canary.port}/after-three-hops`],
        '/loop': [302, '/loop'],
      };
      const hop = hops[u.pathname];
      if (hop) {
        res.writeHead(hop[0], { location: hop[1] });
        return res.end();
      }
      res.writeHead(200, { 'content-type': 'text/plain' }).end('public page');
    });
    // Exactly this host:port is allowed; the canary's port on the same host is not.
    tool = new FetchPageTool({ allowHosts: [origin.hostPort], resolver: fakeResolver, timeoutMs: 3_000 });
  });
  afterAll(async () => {
    await tool.onModuleDestroy();
    await Promise.all([canary.close(), origin.close()]);
  });

  const targets = (p: number) => [
    `http://127.0.0.1:${p}/`, `http://localhost:${p}/`, `http://[::1]:${p}/`, `http://2130706433:${p}/`, `http://0x7f.1:${p}/`,
    `//127.0.0.1:${p}/protocol-relative`, `http://rebind.test:${p}/`, `http://[::ffff:7f00:1]:${p}/`, 'http://169.254.169.254/latest/',
    'file:///etc/passwd', `gopher://127.0.0.1:${p}/_x`, `http://user:pw@127.0.0.1:${p}/`,
  ];

  it('the allow-listed server itself is reachable', async () => {
    const r = await tool.execute({ url: `${origin.origin}/page` }, ctx());
    expect(r.output).toMatchObject({ status: 200, text: 'public page' });
  });

  it.each([301, 302, 303, 307, 308])('re-checks the target of a %i on every hop', async (status) => {
    for (const target of targets(canary.port)) {
      const url = `${origin.origin}/to?status=${status}&target=${encodeURIComponent(target)}`;
      const err = await refusal(tool, url);
      expect(err.outcome).toBe('validation_error');
      expect(err.message).toMatch(/^Refused: .*\(redirected from http:\/\/127\.0\.0\.1:\d+\/to\?/);
    }
    expect(canary.hits()).toBe(0);
  });

  it('refuses a chain that reaches loopback on its third hop', async () => {
    const err = await refusal(tool, `${origin.origin}/hop1`);
    expect(err.message).toContain(`Refused: http://localhost:${canary.port}/after-three-hops resolves to a loopback address`);
    expect(origin.requests.slice(-3)).toEqual(['/hop1', '/hop2', '/hop3']);
    expect(canary.hits()).toBe(0);
  });

  it('stops a redirect loop after 5 redirects', async () => {
    const before = origin.requests.length;
    const err = await refusal(tool, `${origin.origin}/loop`);
    expect(err.outcome).toBe('exception');
    expect(err.message).toContain('Too many redirects (more than 5)');
    expect(origin.requests.length - before).toBe(6);
  });

  it('follows a redirect that stays on the allow-listed server', async () => {
    const r = await tool.execute({ url: `${origin.origin}/to?target=/final` }, ctx());
    expect(r.output).toMatchObject({ finalUrl: `${origin.origin}/final`, text: 'public page' });
  });

  it('left the canary untouched', () => {
    expect(canary.hits()).toBe(0);
  });
});
