import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ToolsException, ToolsExceptionCode } from '../tools.exception';
import { loadMcpConfig, parseMcpConfig, resolveMcpConfigSource } from './mcp-config';

const FILE = '/etc/orion/mcp.json';
const parse = (mcpServers: unknown, env: NodeJS.ProcessEnv = {}) => parseMcpConfig({ mcpServers }, { file: FILE, env });

function problemsOf(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ToolsException);
    expect((err as ToolsException).code).toBe(ToolsExceptionCode.INVALID_MCP_CONFIG);
    return (err as Error).message;
  }
  throw new Error('expected an invalid config');
}

describe('parseMcpConfig', () => {
  it('reads stdio and HTTP servers in the shared format', () => {
    const servers = parse({
      fs: { command: 'npx', args: ['-y', 'server-filesystem', '/data'], env: { DEBUG: '1', RETRIES: 3 } },
      remote: { url: 'https://mcp.example.com/mcp', headers: { 'X-Team': 'orion' } },
      legacy: { type: 'sse', url: 'http://127.0.0.1:9000/sse' },
      hinted: { type: 'http', url: 'http://127.0.0.1:9001/mcp' },
      plain: { type: 'stdio', command: 'my-server', autoApprove: ['x'] },
    });
    expect(servers).toEqual([
      { name: 'fs', transport: 'stdio', command: 'npx', args: ['-y', 'server-filesystem', '/data'], env: { DEBUG: '1', RETRIES: '3' }, cwd: undefined },
      { name: 'remote', transport: 'streamable-http', url: 'https://mcp.example.com/mcp', headers: { 'X-Team': 'orion' } },
      { name: 'legacy', transport: 'sse', url: 'http://127.0.0.1:9000/sse', headers: {} },
      { name: 'hinted', transport: 'streamable-http', url: 'http://127.0.0.1:9001/mcp', headers: {} },
      { name: 'plain', transport: 'stdio', command: 'my-server', args: [], env: {}, cwd: undefined },
    ]);
  });

  it('accepts an empty server map and leaves out disabled servers', () => {
    expect(parse({})).toEqual([]);
    expect(parse({ off: { command: 'x', disabled: true } })).toEqual([]);
  });

  it('rejects bad server names, naming the file and every problem', () => {
    const message = problemsOf(() =>
      parse({ 'a__b': { command: 'x' }, 'has space': { command: 'x' }, ['n'.repeat(33)]: { command: 'x' }, ok: { command: 'x' } }),
    );
    expect(message).toContain(FILE);
    expect(message).toContain('mcpServers.a__b: server name must match');
    expect(message).toContain('mcpServers.has space: server name');
    expect(message).toContain(`mcpServers.${'n'.repeat(33)}: server name`);
    expect(message).not.toContain('mcpServers.ok');
  });

  it.each([
    [{ x: { command: 'a', url: 'http://h/mcp' } }, 'set either "command" (stdio) or "url" (HTTP), not both'],
    [{ x: {} }, 'needs "command" (stdio server) or "url" (HTTP server)'],
    [{ x: { command: '' } }, 'x.command: must be a non-empty string'],
    [{ x: { command: 'a', args: 'b' } }, 'x.args: must be an array of strings'],
    [{ x: { command: 'a', env: { A: { nested: 1 } } } }, 'x.env.A: must be a string'],
    [{ x: { url: 'ftp://host/mcp' } }, 'x.url: must be an http(s) URL'],
    [{ x: { type: 'websocket', url: 'ws://h' } }, 'x.type: must be one of stdio, http, streamable-http, streamableHttp, sse'],
    [{ x: { type: 'stdio', url: 'http://h/mcp' } }, 'x.command: must be a non-empty string'],
    [{ x: 'npx server' }, 'x: expected an object'],
  ])('rejects %j', (servers, problem) => {
    expect(problemsOf(() => parse(servers))).toContain(problem);
  });

  it('rejects a document without mcpServers', () => {
    expect(problemsOf(() => parseMcpConfig({ servers: {} }, { file: FILE }))).toContain('expected an object {"mcpServers"');
    expect(problemsOf(() => parseMcpConfig([], { file: FILE }))).toContain(FILE);
  });

  it('interpolates ${VAR} and ${VAR:-default} in args, env, url and headers', () => {
    const env = { TOKEN: 't0k3n', HOST: '127.0.0.1', DIR: '/srv/data' };
    const [stdio, http] = parse(
      {
        s: { command: 'srv', args: ['${DIR}/in', '--mode=${MODE:-fast}', 'literal $${DIR}'], env: { GH: '${TOKEN}' } },
        h: { url: 'http://${HOST}:8080/mcp', headers: { Authorization: 'Bearer ${TOKEN}' } },
      },
      env,
    );
    expect(stdio).toMatchObject({ args: ['/srv/data/in', '--mode=fast', 'literal ${DIR}'], env: { GH: 't0k3n' } });
    expect(http).toMatchObject({ url: 'http://127.0.0.1:8080/mcp', headers: { Authorization: 'Bearer t0k3n' } });
  });

  it('refuses unset variables and Orion secrets in interpolation', () => {
    const env = { LLM_API_KEY: 'sk-secret-value', API_KEYS: 'k1', DATABASE_URL: 'postgres://u:p@h/db' };
    const message = problemsOf(() =>
      parse({ s: { command: 'srv', env: { KEY: '${LLM_API_KEY}', K: '${API_KEYS}', D: '${DATABASE_URL}', M: '${MISSING}' } } }, env),
    );
    expect(message).toContain("mcpServers.s.env.KEY: ${LLM_API_KEY} is one of Orion's own secrets");
    expect(message).toContain('mcpServers.s.env.K: ${API_KEYS}');
    expect(message).toContain('mcpServers.s.env.D: ${DATABASE_URL}');
    expect(message).toContain('mcpServers.s.env.M: environment variable MISSING is not set');
    expect(message).not.toContain('sk-secret-value');
  });
});

describe('loadMcpConfig', () => {
  let dir: string;
  beforeAll(() => (dir = mkdtempSync(join(tmpdir(), 'orion-mcp-config-'))));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('treats a missing default ./mcp.json as no servers', () => {
    const source = resolveMcpConfigSource(undefined, dir);
    expect(source).toEqual({ path: join(dir, 'mcp.json'), explicit: false });
    expect(loadMcpConfig(source)).toEqual([]);
  });

  it('stops on a missing explicit MCP_CONFIG, naming the file', () => {
    const source = resolveMcpConfigSource('conf/missing.json', dir);
    expect(source.explicit).toBe(true);
    expect(problemsOf(() => loadMcpConfig(source))).toBe(
      `Invalid MCP config ${join(dir, 'conf/missing.json')}:\n  file not found (set by MCP_CONFIG)`,
    );
  });

  it('stops on invalid JSON, even in the default file', () => {
    writeFileSync(join(dir, 'mcp.json'), '{"mcpServers": {');
    const message = problemsOf(() => loadMcpConfig(resolveMcpConfigSource(undefined, dir)));
    expect(message).toContain(join(dir, 'mcp.json'));
    expect(message).toContain('not valid JSON');
  });

  it('resolves a relative cwd against the file', () => {
    const file = join(dir, 'servers.json');
    writeFileSync(file, JSON.stringify({ mcpServers: { a: { command: 'x', cwd: 'work' }, b: { command: 'y', cwd: '/abs' } } }));
    const servers = loadMcpConfig(resolveMcpConfigSource(file, '/'));
    expect(servers.map((s) => (s.transport === 'stdio' ? s.cwd : undefined))).toEqual([join(dir, 'work'), '/abs']);
  });
});
