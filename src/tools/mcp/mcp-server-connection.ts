import type { Logger } from '@nestjs/common';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { ToolListChangedNotificationSchema, type Tool } from '@modelcontextprotocol/sdk/types.js';
import { redactString } from '../../common/util/redact.util';
import { withTimeout } from '../../common/util/abort.util';
import { mcpChildEnvironment } from './mcp-child-env';
import type { McpServerConfig, McpTransportKind } from './mcp-config';

/** `connecting` (first attempt or a reconnect), `connected`, `failed` (down, waiting to retry), `closed` (shut down). */
export type McpServerStatus = 'connecting' | 'connected' | 'failed' | 'closed';

export interface McpConnectionTimings {
  /** initialize + first tools/list of one attempt */
  connectTimeoutMs: number;
  /** first reconnect delay; doubles per failed attempt */
  initialBackoffMs: number;
  maxBackoffMs: number;
}

export interface McpConnectionEvents {
  /** the server's full tool list: after each (re)connect and after each `notifications/tools/list_changed` */
  onTools(tools: Tool[]): void | Promise<void>;
  onStatus(status: McpServerStatus, error?: string): void;
}

/** What a tool adapter needs from its server's connection. */
export interface McpToolConnection {
  readonly serverName: string;
  readonly transportKind: McpTransportKind;
  readonly status: McpServerStatus;
  /** the client while the server is connected, else undefined */
  connectedClient(): Pick<Client, 'callTool'> | undefined;
  /** a call failed below the MCP layer (HTTP): drop the connection and reconnect */
  markBroken(reason: string): void;
}

interface ToolRefresh {
  client: Client;
  /** another list_changed arrived while listing */
  again: boolean;
  done: Promise<void>;
}

export const MCP_CLIENT_INFO = { name: 'orion', version: '0.1.0' } as const;

/** Cap on tools/list pages, against a server whose cursor never ends. */
const MAX_LIST_PAGES = 50;
/** Longest wait for a closing transport; the SDK has SIGKILLed a stdio child by then. */
const TRANSPORT_CLOSE_GUARD_MS = 5_000;
/** Last bytes of a stdio server's stderr kept for `lastError`. */
const STDERR_TAIL_BYTES = 2048;

/**
 * Delay before reconnect attempt `attempt` (0-based): exponential from `initialMs`, capped at `maxMs`,
 * with "equal jitter" (a random point in the upper half) so servers that died together don't retry in step.
 */
export function backoffDelay(attempt: number, initialMs: number, maxMs: number, random: () => number = Math.random): number {
  const ceiling = Math.min(maxMs, initialMs * 2 ** Math.min(attempt, 30));
  return Math.round(ceiling / 2 + (random() * ceiling) / 2);
}

/**
 * One MCP server: an SDK Client over stdio, Streamable HTTP or SSE, kept alive. When the transport
 * closes (child exit, HTTP failure) the status becomes `failed` and a reconnect is scheduled with
 * back-off; every successful (re)connect lists the tools again. `close()` ends it for good and waits
 * for the child process to exit (the SDK closes stdin, then SIGTERM, then SIGKILL).
 */
export class McpServerConnection implements McpToolConnection {
  status: McpServerStatus = 'connecting';
  lastError?: string;
  private client?: Client;
  private transport?: Transport;
  private attempt = 0;
  private retryTimer?: NodeJS.Timeout;
  private closing = false;
  private refresh?: ToolRefresh;
  private stderrTail = '';
  /** closes of failed clients still running (a stdio child may take up to 4 s to die) */
  private readonly closingClients = new Set<Promise<void>>();
  /** resolves when a client's transport has closed (for stdio: the child process is gone) */
  private readonly transportClosed = new WeakMap<Client, Promise<void>>();

  constructor(
    readonly config: McpServerConfig,
    private readonly events: McpConnectionEvents,
    private readonly timings: McpConnectionTimings,
    private readonly logger: Pick<Logger, 'log' | 'warn' | 'debug'>,
    /** masks secrets in what is logged or kept as `lastError` (the registry's values, in the app) */
    private readonly mask: (text: string) => string = (text) => redactString(text),
  ) {}

  get serverName(): string {
    return this.config.name;
  }

  get transportKind(): McpTransportKind {
    return this.config.transport;
  }

  /** pid of the stdio child while it runs */
  get pid(): number | undefined {
    return this.transport instanceof StdioClientTransport ? (this.transport.pid ?? undefined) : undefined;
  }

  connectedClient(): Client | undefined {
    return this.status === 'connected' ? this.client : undefined;
  }

  /** First connection attempt; resolves when it succeeded or failed (a failure schedules a retry). Never rejects. */
  start(): Promise<void> {
    return this.connect();
  }

  markBroken(reason: string): void {
    if (this.client) this.fail(this.client, reason);
  }

  async close(): Promise<void> {
    this.closing = true;
    clearTimeout(this.retryTimer);
    const client = this.client;
    this.client = undefined;
    this.setStatus('closed');
    if (client) this.closeClient(client);
    await Promise.all(this.closingClients);
  }

  /** Closes a client and waits until its transport is really closed (a stdio child has exited). */
  private closeClient(client: Client): void {
    const closed = this.transportClosed.get(client) ?? Promise.resolve();
    const closing = Promise.all([
      client.close().catch(() => undefined),
      // the SDK ends stdin, then sends SIGTERM after 2 s and SIGKILL after 4 s
      withTimeout(closed, TRANSPORT_CLOSE_GUARD_MS, undefined),
    ]).then(() => undefined);
    this.closingClients.add(closing);
    void closing.finally(() => this.closingClients.delete(closing));
  }

  private async connect(): Promise<void> {
    if (this.closing) return;
    this.setStatus('connecting');
    const client = new Client(MCP_CLIENT_INFO, { capabilities: {} });
    this.client = client;
    // While connecting, a close also rejects the pending request; the catch below reports it with its reason.
    client.onclose = () => {
      if (this.status === 'connected') this.fail(client, this.withStderr('connection closed'));
    };
    client.onerror = (err) => {
      this.logger.debug(`${this.serverName}: ${this.mask(err.message)}`);
      // Streamable HTTP: the session's event stream is gone for good (server down or restarted).
      if (this.status === 'connected' && /Maximum reconnection attempts/.test(err.message)) {
        this.fail(client, `event stream lost: ${err.message}`);
      }
    };
    client.setNotificationHandler(ToolListChangedNotificationSchema, async () => {
      await this.refreshTools(client).catch((err) =>
        this.logger.warn(`${this.serverName}: re-listing tools failed: ${this.mask(errorText(err))}`),
      );
    });
    try {
      const transport = this.createTransport();
      this.transport = transport;
      // Set before connect: the Client chains its own handler after this one.
      this.transportClosed.set(client, new Promise<void>((resolve) => (transport.onclose = resolve)));
      await client.connect(transport, { timeout: this.timings.connectTimeoutMs });
      await this.refreshTools(client);
      if (this.closing) return this.closeClient(client);
      if (this.client !== client) return;
      this.attempt = 0;
      this.setStatus('connected');
    } catch (err) {
      if (this.closing) return this.closeClient(client);
      this.fail(client, this.withStderr(errorText(err)));
    }
  }

  /**
   * Lists the tools and hands them over. A request while a listing of the same client runs is coalesced
   * into one more listing; a listing for a new client waits for the old one to finish (it then drops its result).
   */
  private refreshTools(client: Client): Promise<void> {
    if (this.refresh?.client === client) {
      this.refresh.again = true;
      return this.refresh.done;
    }
    const previous = this.refresh?.done.catch(() => undefined);
    const run: ToolRefresh = { client, again: false, done: Promise.resolve() };
    run.done = (async () => {
      await previous;
      try {
        do {
          run.again = false;
          const tools = await this.listTools(client);
          if (this.client !== client || this.closing) return;
          // awaited: a listing is applied (pins checked) before the server counts as connected
          await this.events.onTools(tools);
        } while (run.again);
      } finally {
        if (this.refresh === run) this.refresh = undefined;
      }
    })();
    this.refresh = run;
    return run.done;
  }

  private async listTools(client: Client): Promise<Tool[]> {
    if (!client.getServerCapabilities()?.tools) return [];
    const tools: Tool[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < MAX_LIST_PAGES; page++) {
      const res = await client.listTools(cursor ? { cursor } : undefined, { timeout: this.timings.connectTimeoutMs });
      tools.push(...res.tools);
      cursor = res.nextCursor;
      if (!cursor) break;
    }
    return tools;
  }

  /** The current client failed: mark the server down, close what is left of it, retry later. */
  private fail(client: Client, reason: string): void {
    if (this.closing || this.client !== client) return;
    this.client = undefined;
    this.setStatus('failed', reason);
    this.closeClient(client);
    const delay = backoffDelay(this.attempt++, this.timings.initialBackoffMs, this.timings.maxBackoffMs);
    this.logger.warn(`${this.serverName}: ${this.mask(reason)}; reconnecting in ${delay} ms (attempt ${this.attempt})`);
    this.retryTimer = setTimeout(() => void this.connect(), delay);
    this.retryTimer.unref();
  }

  private setStatus(status: McpServerStatus, error?: string): void {
    if (status === this.status && error === undefined) return;
    this.status = status;
    if (error !== undefined) this.lastError = this.mask(error);
    this.events.onStatus(status, error !== undefined ? this.lastError : undefined);
  }

  private createTransport(): Transport {
    const c = this.config;
    switch (c.transport) {
      case 'stdio': {
        this.stderrTail = '';
        const t = new StdioClientTransport({
          command: c.command,
          args: c.args,
          env: mcpChildEnvironment(c.env),
          cwd: c.cwd,
          stderr: 'pipe',
        });
        // Read stderr always: an unread pipe fills up and blocks the child.
        t.stderr?.on('data', (chunk: Buffer) => {
          const text = chunk.toString('utf8');
          this.stderrTail = (this.stderrTail + text).slice(-STDERR_TAIL_BYTES);
          this.logger.debug(`${c.name} stderr: ${this.mask(text.trimEnd())}`);
        });
        return t;
      }
      case 'streamable-http':
        return new StreamableHTTPClientTransport(new URL(c.url), { requestInit: { headers: c.headers } });
      case 'sse':
        return new SSEClientTransport(new URL(c.url), { requestInit: { headers: c.headers } });
    }
  }

  private withStderr(reason: string): string {
    const tail = this.stderrTail.trim().split('\n').slice(-3).join(' | ');
    return tail ? `${reason} (stderr: ${tail.slice(-500)})` : reason;
  }
}

function errorText(err: unknown): string {
  if (err instanceof Error) {
    const cause = (err as { cause?: { message?: string; code?: string } }).cause;
    return cause?.code || cause?.message ? `${err.message} (${cause.code ?? cause.message})` : err.message;
  }
  return String(err);
}
