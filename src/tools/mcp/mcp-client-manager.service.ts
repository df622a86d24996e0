import {
  Inject,
  Injectable,
  Logger,
  Optional,
  type OnApplicationShutdown,
  type OnModuleInit,
} from '@nestjs/common';
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { AppConfigService } from '../../config/app-config.service';
import { SecretRegistry } from '../../common/secrets/secret-registry';
import { withTimeout } from '../../common/util/abort.util';
import { TRACE_SINK, type TraceSink } from '../../trace/trace-sink.port';
import { definitionHash, ToolRegistryService } from '../tool-registry.service';
import { loadMcpConfig, resolveMcpConfigSource, type McpServerConfig, type McpTransportKind } from './mcp-config';
import { McpServerConnection, type McpConnectionTimings, type McpServerStatus } from './mcp-server-connection';
import { hintsFromAnnotations, McpToolAdapter, repeatFromAnnotations, type McpToolSpec } from './mcp-tool.adapter';
import { namespacedToolName } from './mcp-tool-name.util';
import { McpToolPinsService, pinHash, pinnedDefinition, type SeenTool } from './mcp-tool-pins.service';

/** Health view of one configured server. */
export interface McpServerInfo {
  name: string;
  transport: McpTransportKind;
  status: McpServerStatus;
  /** tools of this server currently in the registry */
  toolCount: number;
  /** the most recent failure (redacted), kept after a successful reconnect */
  lastError?: string;
}

export interface McpManagerOptions extends McpConnectionTimings {
  /** servers to use instead of reading MCP_CONFIG (tests, programmatic set-ups) */
  servers?: McpServerConfig[];
  /** how long start-up waits for the first connection attempts; slower servers join when ready */
  startupWaitMs: number;
}

/** Optional overrides of McpManagerOptions (Nest: `{ provide: MCP_MANAGER_OPTIONS, useValue: {...} }`). */
export const MCP_MANAGER_OPTIONS = Symbol('MCP_MANAGER_OPTIONS');

/**
 * Defaults. The back-off (0.5 s doubling to 30 s) retries a crashed local server almost at once and a
 * long-gone remote one twice a minute. 30 s per attempt leaves room for `npx -y` fetching a server on
 * its first start; start-up itself waits at most 10 s.
 */
export const DEFAULT_MCP_MANAGER_OPTIONS: McpManagerOptions = {
  connectTimeoutMs: 30_000,
  initialBackoffMs: 500,
  maxBackoffMs: 30_000,
  startupWaitMs: 10_000,
};

interface RegisteredMcpTool {
  adapter: McpToolAdapter;
  hash: string;
}

interface ServerState {
  connection: McpServerConnection;
  tools: Map<string, RegisteredMcpTool>;
  /** registry name → why its pin holds it; every tool of the server is held while `pinError` is set */
  held: Map<string, string>;
  pinError?: string;
  /** the pinned part of the last listing, re-checked after an approval */
  seen: SeenTool[];
  /** pin checks of one server run one after the other */
  pinQueue: Promise<void>;
}

/**
 * Connects the MCP servers of MCP_CONFIG and keeps their tools in the ToolRegistry as
 * `<server>__<tool>` (origin `mcp:<server>`), following `notifications/tools/list_changed` and
 * reconnecting crashed servers with back-off; their tools stay registered but unavailable meanwhile.
 * An invalid MCP_CONFIG stops start-up (ToolsException INVALID_MCP_CONFIG).
 */
@Injectable()
export class McpClientManagerService implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('McpClientManager');
  private readonly options: McpManagerOptions;
  private readonly states = new Map<string, ServerState>();
  private readonly reportedSkips = new Set<string>();
  private started = false;
  readonly secrets: SecretRegistry;

  constructor(
    private readonly config: AppConfigService,
    private readonly registry: ToolRegistryService,
    @Inject(TRACE_SINK) private readonly trace: TraceSink,
    @Optional() @Inject(MCP_MANAGER_OPTIONS) options?: Partial<McpManagerOptions>,
    @Optional() secrets?: SecretRegistry,
    @Optional() private readonly pins?: McpToolPinsService,
  ) {
    this.options = { ...DEFAULT_MCP_MANAGER_OPTIONS, ...options };
    this.secrets = secrets ?? SecretRegistry.fromConfig(config);
    pins?.onApproved((server) => this.checkPins(server));
  }

  async onModuleInit(): Promise<void> {
    await this.start();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.close();
  }

  /**
   * Loads the servers (throws on an invalid config) and makes the first connection attempts,
   * waiting for them at most `startupWaitMs`.
   */
  async start(): Promise<void> {
    if (this.started) return;
    this.started = true;
    const servers =
      this.options.servers ?? loadMcpConfig(resolveMcpConfigSource(this.config.get('MCP_CONFIG')));
    if (servers.length === 0) return;
    // before any server starts: whatever it prints or returns is masked from its first line
    for (const server of servers) this.secrets.set(`mcp:${server.name}`, serverSecrets(server));
    this.logger.log(`connecting ${servers.length} MCP server(s): ${servers.map((s) => s.name).join(', ')}`);
    const attempts = servers.map((server) => {
      const connection = new McpServerConnection(
        server,
        {
          onTools: (tools) => this.applyTools(server.name, tools),
          onStatus: (status, error) => this.onStatus(server, status, error),
        },
        this.options,
        this.logger,
        (text) => this.secrets.mask(text),
      );
      this.states.set(server.name, { connection, tools: new Map(), held: new Map(), seen: [], pinQueue: Promise.resolve() });
      return connection.start();
    });
    // start-up goes on after startupWaitMs; the attempts still running finish in the background
    await withTimeout(Promise.all(attempts), this.options.startupWaitMs, undefined);
  }

  /** Closes every client and waits for stdio children to exit. Tools stay registered, unavailable. */
  async close(): Promise<void> {
    await Promise.all([...this.states.values()].map((s) => s.connection.close()));
  }

  servers(): McpServerInfo[] {
    return [...this.states.values()].map(({ connection, tools }) => ({
      name: connection.serverName,
      transport: connection.transportKind,
      status: connection.status,
      toolCount: tools.size,
      ...(connection.lastError ? { lastError: connection.lastError } : {}),
    }));
  }

  /** pid of a stdio server's child process while it runs (diagnostics, tests). */
  childPid(server: string): number | undefined {
    return this.states.get(server)?.connection.pid;
  }

  /**
   * Applies a server's full tool list: checks the pins, registers new and changed tools, unregisters
   * vanished ones. A held tool is registered (listed with its reason) but never available.
   */
  private async applyTools(server: string, tools: Tool[]): Promise<void> {
    const state = this.states.get(server);
    if (!state) return;
    const next = new Map<string, RegisteredMcpTool>();
    const seen: SeenTool[] = [];
    const fresh: RegisteredMcpTool[] = [];
    for (const tool of tools) {
      const name = namespacedToolName(server, tool.name);
      if (!name) {
        this.skip(server, tool.name, 'its name has no usable characters');
        continue;
      }
      if (next.has(name)) {
        this.skip(server, tool.name, `its name collides with ${next.get(name)!.adapter.spec.remoteName} as ${name}`);
        continue;
      }
      const spec: McpToolSpec = {
        name,
        remoteName: tool.name,
        description: tool.description ?? tool.title ?? `Tool ${tool.name} of MCP server ${server}`,
        parameters: toParameters(tool.inputSchema),
        repeat: repeatFromAnnotations(tool.annotations),
        hints: hintsFromAnnotations(tool.annotations),
      };
      const pinned = pinnedDefinition(tool);
      seen.push({ tool: tool.name, name, definition: pinned, hash: pinHash(pinned) });
      const hash = definitionHash(spec);
      const previous = state.tools.get(name);
      // the hash covers what the model reads; the annotations (repeat, approval hints) are compared too
      const sameAnnotations = previous && JSON.stringify([previous.adapter.spec.repeat, previous.adapter.spec.hints]) === JSON.stringify([spec.repeat, spec.hints]);
      if (previous && previous.hash === hash && previous.adapter.spec.remoteName === tool.name && sameAnnotations) {
        next.set(name, previous);
        continue;
      }
      const adapter = new McpToolAdapter(
        spec,
        state.connection,
        { callTimeoutMs: this.config.get('TOOL_TIMEOUT_MS'), maxResultBytes: this.config.get('TOOL_RESULT_MAX_BYTES') },
        () => state.pinError ?? state.held.get(name),
      );
      fresh.push({ adapter, hash });
      next.set(name, { adapter, hash });
    }
    state.seen = seen;
    // checked before the new definitions are registered: a changed tool is never available in between
    await this.checkPins(server);
    for (const f of fresh) {
      try {
        if (!this.registry.register(f.adapter)) next.delete(f.adapter.name);
      } catch (err) {
        next.delete(f.adapter.name);
        this.skip(server, f.adapter.spec.remoteName, (err as Error).message);
      }
    }
    for (const name of state.tools.keys()) {
      if (!next.has(name)) this.registry.unregister(name);
    }
    state.tools = next;
  }

  /** Re-reads the pins of a server's last listing; a failed check holds all its tools (fail closed). */
  private checkPins(server: string): Promise<void> {
    const state = this.states.get(server);
    if (!state || !this.pins) return Promise.resolve();
    const pins = this.pins;
    const run = state.pinQueue.then(async () => {
      try {
        const held = await pins.reconcile(server, state.seen);
        for (const [name, reason] of held) {
          if (state.held.get(name) === reason) continue;
          this.logger.warn(`${server}: tool ${name} held: ${reason}`);
          this.trace.record({ type: 'mcp_tool_held', details: { server, tool: name, reason, hash: state.seen.find((t) => t.name === name)?.hash } });
        }
        for (const name of state.held.keys()) {
          if (!held.has(name)) this.trace.record({ type: 'mcp_tool_released', details: { server, tool: name } });
        }
        state.held = held;
        state.pinError = undefined;
      } catch (err) {
        state.pinError = 'pin check failed';
        this.logger.warn(`${server}: checking tool pins failed, its tools are held: ${(err as Error).message}`);
      }
    });
    state.pinQueue = run;
    return run;
  }

  /** Logs and traces a skipped tool once, not on every re-listing. */
  private skip(server: string, tool: string, reason: string): void {
    const key = `${server}\0${tool}\0${reason}`;
    if (this.reportedSkips.has(key)) return;
    this.reportedSkips.add(key);
    this.logger.warn(`${server}: tool "${tool}" skipped: ${reason}`);
    this.trace.record({ type: 'mcp_tool_skipped', details: { server, tool, reason } });
  }

  private onStatus(server: McpServerConfig, status: McpServerStatus, error?: string): void {
    if (status === 'connected') this.logger.log(`${server.name}: connected (${server.transport})`);
    if (status === 'connecting') return;
    this.trace.record({
      type: 'mcp_server_status',
      details: {
        server: server.name,
        transport: server.transport,
        status,
        toolCount: this.states.get(server.name)?.tools.size ?? 0,
        ...(error ? { error } : {}),
      },
    });
  }
}

/** An MCP inputSchema as tool parameters: always `type: "object"`, without `$schema` (models and ajv trip on it). */
function toParameters(inputSchema: unknown): Record<string, unknown> {
  if (typeof inputSchema !== 'object' || inputSchema === null || Array.isArray(inputSchema)) return { type: 'object' };
  const { $schema: _ignored, ...schema } = inputSchema as Record<string, unknown>;
  return { ...schema, type: 'object' };
}

/** The values of a server's `env` (stdio) or `headers` (HTTP): its credentials, secrets like Orion's own. */
export function serverSecrets(server: McpServerConfig): string[] {
  return Object.values(server.transport === 'stdio' ? server.env : server.headers);
}
