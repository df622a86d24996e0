import { join } from 'node:path';
import type { AppConfigService } from '../../src/config/app-config.service';
import type { TraceRecord, TraceSink } from '../../src/trace/trace-sink.port';
import { ToolRegistryService } from '../../src/tools/tool-registry.service';
import type { ToolExecutionContext } from '../../src/tools/tool-definition';
import type { McpStdioServerConfig } from '../../src/tools/mcp/mcp-config';

/** Test kit for src/tools/mcp: fakes for the manager's dependencies and the real servers' commands. */

const ROOT = join(__dirname, '..', '..');
const NODE_MODULES = join(ROOT, 'node_modules', '@modelcontextprotocol');

/** Records every trace event in memory. */
export class InMemoryTraceSink implements TraceSink {
  readonly events: TraceRecord[] = [];
  record(event: TraceRecord): void {
    this.events.push(event);
  }
  async flush(): Promise<void> {}
  ofType(type: string): TraceRecord[] {
    return this.events.filter((e) => e.type === type);
  }
}

/** An AppConfigService look-alike: `get` answers from `values`, `list` splits comma lists. */
export function fakeConfig(values: Record<string, unknown> = {}): AppConfigService {
  const all: Record<string, unknown> = { TOOL_TIMEOUT_MS: 30_000, TOOL_RESULT_MAX_BYTES: 65_536, ...values };
  return {
    get: (key: string) => all[key],
    list: (key: string) => (typeof all[key] === 'string' ? (all[key] as string).split(',').filter(Boolean) : []),
  } as unknown as AppConfigService;
}

export function realRegistry(trace: TraceSink, config = fakeConfig()): ToolRegistryService {
  return new ToolRegistryService(config, trace);
}

export function everythingServer(name = 'everything', env: Record<string, string> = {}): McpStdioServerConfig {
  return {
    name,
    transport: 'stdio',
    command: process.execPath,
    args: [join(NODE_MODULES, 'server-everything', 'dist', 'index.js'), 'stdio'],
    env,
  };
}

export function filesystemServer(root: string, name = 'fs'): McpStdioServerConfig {
  return {
    name,
    transport: 'stdio',
    command: process.execPath,
    args: [join(NODE_MODULES, 'server-filesystem', 'dist', 'index.js'), root],
    env: {},
  };
}

/** test/fixtures/mcp/fixture-server.mjs: add_tool, remove_tool, change_description, crash, slow, fail, big, mixed… */
export function fixtureServer(name = 'fx'): McpStdioServerConfig {
  return {
    name,
    transport: 'stdio',
    command: process.execPath,
    args: [join(ROOT, 'test', 'fixtures', 'mcp', 'fixture-server.mjs')],
    env: {},
  };
}

export function toolContext(signal: AbortSignal = new AbortController().signal): ToolExecutionContext {
  return { projectId: 'default', requestId: 'req-test', signal };
}

/** Polls until `check` returns a truthy value (or throws the last error after `timeoutMs`). */
export async function waitFor<T>(check: () => T | Promise<T>, timeoutMs = 5_000, what = 'condition'): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  while (Date.now() < deadline) {
    try {
      const v = await check();
      if (v) return v;
    } catch (err) {
      lastError = err;
    }
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`timed out waiting for ${what}${lastError ? `: ${(lastError as Error).message}` : ''}`);
}

export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Waits until the service at `url` lists `tool` as available (an MCP server connects after start-up). */
export async function waitForTool(url: string, tool: string, timeoutMs = 15_000): Promise<void> {
  await waitFor(async () => {
    const tools: Array<{ name: string; available: boolean }> = await (await fetch(`${url}/api/tools`)).json();
    return tools.some((x) => x.name === tool && x.available);
  }, timeoutMs, `tool ${tool} from the MCP server`);
}
