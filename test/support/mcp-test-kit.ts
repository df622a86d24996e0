import { join } from 'node:path';
import { waitFor as pollFor } from './wait-for';
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

/** The shared poll (wait-for.ts) in the positional form this kit's callers use. */
export function waitFor<T>(check: () => T | Promise<T>, timeoutMs = 5_000, what = 'condition'): Promise<NonNullable<T>> {
  return pollFor(check, { timeoutMs, what });
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
