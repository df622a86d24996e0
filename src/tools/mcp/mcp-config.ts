import { existsSync, readFileSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import { ToolsException, ToolsExceptionCode } from '../tools.exception';

/**
 * MCP server configuration in the format MCP clients share (Claude Desktop, Cursor, VS Code…):
 *
 * ```json
 * { "mcpServers": {
 *     "fs":     { "command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/data"],
 *                 "env": { "GITHUB_TOKEN": "${GITHUB_TOKEN}" }, "cwd": "." },
 *     "remote": { "url": "https://mcp.example.com/mcp", "headers": { "Authorization": "Bearer ${REMOTE_TOKEN}" } } } }
 * ```
 *
 * - `type` is an optional hint: `stdio`, `http` / `streamable-http` / `streamableHttp` (Streamable HTTP,
 *   the default for `url`), or `sse` (the deprecated HTTP+SSE transport).
 * - `disabled: true` leaves a server out. Other unknown keys (`autoApprove`, `alwaysAllow`, …) that other
 *   clients write are ignored.
 * - Server names match `[A-Za-z0-9_-]{1,32}` and contain no `__`, the separator of `<server>__<tool>`.
 * - `${VAR}` and `${VAR:-default}` in `args`, `env` values, `url` and `headers` values are replaced from
 *   Orion's environment at load time. A variable that is unset and has no default is an error, and so is
 *   any reference to Orion's own secrets (LLM_API_KEY, API_KEYS, DATABASE_URL): they never reach a server
 *   by accident. `$${` writes a literal `${`.
 * - A relative `cwd` is resolved against the config file's folder.
 */
export type McpServerConfig = McpStdioServerConfig | McpHttpServerConfig;

export interface McpStdioServerConfig {
  name: string;
  transport: 'stdio';
  command: string;
  args: string[];
  /** only these variables are added to the child's allow-listed environment */
  env: Record<string, string>;
  cwd?: string;
}

export interface McpHttpServerConfig {
  name: string;
  transport: 'streamable-http' | 'sse';
  url: string;
  headers: Record<string, string>;
}

export type McpTransportKind = McpServerConfig['transport'];

/** `[A-Za-z0-9_-]{1,32}` without `__`: keeps `<server>__<tool>` unambiguous and within 64 characters. */
export const MCP_SERVER_NAME = /^[A-Za-z0-9_-]{1,32}$/;

/** Orion's own secrets: a config can never pull them into a server's env, args, url or headers. */
export const MCP_FORBIDDEN_VARIABLES: ReadonlySet<string> = new Set(['LLM_API_KEY', 'API_KEYS', 'DATABASE_URL']);

const TYPE_HINTS: Record<string, McpTransportKind> = {
  stdio: 'stdio',
  http: 'streamable-http',
  'streamable-http': 'streamable-http',
  streamableHttp: 'streamable-http',
  sse: 'sse',
};

/** Where the servers come from: MCP_CONFIG when set (must exist), else `./mcp.json` when present. */
export interface McpConfigSource {
  path: string;
  /** set explicitly through MCP_CONFIG: a missing file stops start-up */
  explicit: boolean;
}

export function resolveMcpConfigSource(configured: string | undefined, cwd = process.cwd()): McpConfigSource {
  return configured
    ? { path: resolve(cwd, configured), explicit: true }
    : { path: resolve(cwd, 'mcp.json'), explicit: false };
}

/**
 * Reads and validates the file. A missing default file means no servers; a missing explicit file, bad
 * JSON or any invalid entry throws ToolsException(INVALID_MCP_CONFIG) naming the file and every problem.
 */
export function loadMcpConfig(source: McpConfigSource, env: NodeJS.ProcessEnv = process.env): McpServerConfig[] {
  if (!existsSync(source.path)) {
    if (!source.explicit) return [];
    throw invalid(source.path, ['file not found (set by MCP_CONFIG)']);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(source.path, 'utf8'));
  } catch (err) {
    throw invalid(source.path, [`not valid JSON: ${(err as Error).message}`]);
  }
  return withResolvedCwd(parseMcpConfig(raw, { file: source.path, env }), source.path);
}

/** Validates an already-parsed config object (see McpServerConfig for the rules). */
export function parseMcpConfig(raw: unknown, opts: { file: string; env?: NodeJS.ProcessEnv }): McpServerConfig[] {
  const env = opts.env ?? process.env;
  const problems: string[] = [];
  if (!isRecord(raw) || !isRecord(raw.mcpServers)) {
    throw invalid(opts.file, ['expected an object {"mcpServers": {name: {command, args?, env?, cwd?} | {url, headers?}}}']);
  }
  const servers: McpServerConfig[] = [];
  for (const [name, entry] of Object.entries(raw.mcpServers)) {
    const at = `mcpServers.${name}`;
    const before = problems.length;
    if (!MCP_SERVER_NAME.test(name) || name.includes('__')) {
      problems.push(`${at}: server name must match [A-Za-z0-9_-]{1,32} and must not contain "__"`);
    }
    if (!isRecord(entry)) {
      problems.push(`${at}: expected an object`);
      continue;
    }
    if (entry.disabled === true) continue;
    const server = parseServer(name, entry, at, problems, (value, where) => interpolate(value, env, where, problems));
    if (server && problems.length === before) servers.push(server);
  }
  if (problems.length > 0) throw invalid(opts.file, problems);
  return servers;
}

type Interpolate = (value: string, where: string) => string;

function parseServer(
  name: string,
  entry: Record<string, unknown>,
  at: string,
  problems: string[],
  interp: Interpolate,
): McpServerConfig | undefined {
  let kind: McpTransportKind | undefined;
  if (entry.type !== undefined) {
    kind = typeof entry.type === 'string' ? TYPE_HINTS[entry.type] : undefined;
    if (!kind) {
      problems.push(`${at}.type: must be one of ${Object.keys(TYPE_HINTS).join(', ')}`);
      return undefined;
    }
  }
  const hasCommand = entry.command !== undefined;
  const hasUrl = entry.url !== undefined;
  if (hasCommand && hasUrl) {
    problems.push(`${at}: set either "command" (stdio) or "url" (HTTP), not both`);
    return undefined;
  }
  kind ??= hasUrl ? 'streamable-http' : hasCommand ? 'stdio' : undefined;
  if (!kind) {
    problems.push(`${at}: needs "command" (stdio server) or "url" (HTTP server)`);
    return undefined;
  }

  if (kind === 'stdio') {
    if (typeof entry.command !== 'string' || entry.command.trim() === '') {
      problems.push(`${at}.command: must be a non-empty string`);
      return undefined;
    }
    const args = stringArray(entry.args, `${at}.args`, problems)?.map((a, i) => interp(a, `${at}.args[${i}]`));
    const envVars = stringMap(entry.env, `${at}.env`, problems, interp);
    if (entry.cwd !== undefined && (typeof entry.cwd !== 'string' || entry.cwd === '')) {
      problems.push(`${at}.cwd: must be a non-empty string`);
    }
    return {
      name,
      transport: 'stdio',
      command: entry.command,
      args: args ?? [],
      env: envVars ?? {},
      cwd: typeof entry.cwd === 'string' && entry.cwd ? entry.cwd : undefined,
    };
  }

  if (typeof entry.url !== 'string') {
    problems.push(`${at}.url: must be an http(s) URL string`);
    return undefined;
  }
  const url = interp(entry.url, `${at}.url`);
  if (!/^https?:\/\/[^/]/i.test(url) || !URL.canParse(url)) {
    problems.push(`${at}.url: must be an http(s) URL`);
    return undefined;
  }
  const headers = stringMap(entry.headers, `${at}.headers`, problems, interp);
  return { name, transport: kind, url, headers: headers ?? {} };
}

/** Resolves a stdio server's `cwd` against the config file's folder. */
function withResolvedCwd(servers: McpServerConfig[], configFile: string): McpServerConfig[] {
  return servers.map((s) =>
    s.transport === 'stdio' && s.cwd && !isAbsolute(s.cwd) ? { ...s, cwd: resolve(dirname(configFile), s.cwd) } : s,
  );
}

const VARIABLE = /\$(\$)?\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g;

function interpolate(value: string, env: NodeJS.ProcessEnv, where: string, problems: string[]): string {
  return value.replace(VARIABLE, (match, escaped: string | undefined, name: string, fallback: string | undefined) => {
    if (escaped) return match.slice(1);
    if (MCP_FORBIDDEN_VARIABLES.has(name)) {
      problems.push(`${where}: \${${name}} is one of Orion's own secrets and is never passed to an MCP server`);
      return '';
    }
    const v = env[name];
    if (v !== undefined && v !== '') return v;
    if (fallback !== undefined) return fallback;
    problems.push(`${where}: environment variable ${name} is not set (write \${${name}:-default} for a default)`);
    return '';
  });
}

function stringArray(v: unknown, at: string, problems: string[]): string[] | undefined {
  if (v === undefined) return undefined;
  if (!Array.isArray(v) || v.some((x) => typeof x !== 'string')) {
    problems.push(`${at}: must be an array of strings`);
    return undefined;
  }
  return v as string[];
}

function stringMap(v: unknown, at: string, problems: string[], interp: Interpolate): Record<string, string> | undefined {
  if (v === undefined) return undefined;
  if (!isRecord(v)) {
    problems.push(`${at}: must be an object of strings`);
    return undefined;
  }
  const out: Record<string, string> = {};
  for (const [k, x] of Object.entries(v)) {
    if (typeof x === 'number' || typeof x === 'boolean') out[k] = String(x);
    else if (typeof x === 'string') out[k] = interp(x, `${at}.${k}`);
    else problems.push(`${at}.${k}: must be a string`);
  }
  return out;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function invalid(file: string, problems: string[]): ToolsException {
  return new ToolsException(
    ToolsExceptionCode.INVALID_MCP_CONFIG,
    `Invalid MCP config ${file}:\n${problems.map((p) => `  ${p}`).join('\n')}`,
    { file, problems },
  );
}
