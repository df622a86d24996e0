import { Injectable, NotFoundException, type OnModuleDestroy } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { badFields } from '../common/errors/field-errors';
import { buildMcpServer } from './mcp-tools';
import { McpTurnsService } from './mcp-turns.service';

/** The session header of the Streamable HTTP transport. */
export const MCP_SESSION_HEADER = 'mcp-session-id';
/** A session nobody used this long is closed (its client starts a new one with initialize). */
const IDLE_MS = 30 * 60_000;
const SWEEP_MS = 60_000;
const VERSION = '0.1.0';

interface Session {
  transport: StreamableHTTPServerTransport;
  server: McpServer;
  /** the key that opened it: only that key may use it */
  keyId: string;
  projectId: string;
  closing: AbortController;
  lastUsed: number;
}

/**
 * MCP sessions of this instance. Stateful rather than stateless because a call's
 * notifications/cancelled arrives in another HTTP request and must reach the call's handler; a
 * session is bound to the key and project that opened it, so another key cannot use its id.
 */
@Injectable()
export class McpSessionsService implements OnModuleDestroy {
  private readonly sessions = new Map<string, Session>();
  private readonly sweeper = setInterval(() => this.closeIdle(), SWEEP_MS).unref();

  constructor(private readonly turns: McpTurnsService) {}

  async handle(req: IncomingMessage, res: ServerResponse, body: unknown, who: { keyId: string; projectId: string }): Promise<void> {
    const id = req.headers[MCP_SESSION_HEADER];
    if (Array.isArray(id)) throw badFields([{ field: MCP_SESSION_HEADER, message: `The ${MCP_SESSION_HEADER} header must be sent once` }]);
    if (id !== undefined) {
      const session = this.sessions.get(id);
      // another key's session reads as an unknown one; the client then initializes its own
      if (!session || session.keyId !== who.keyId || session.projectId !== who.projectId) throw new NotFoundException('Unknown MCP session: send initialize without an mcp-session-id header');
      session.lastUsed = Date.now();
      return session.transport.handleRequest(req, res, body);
    }
    if (req.method !== 'POST' || !isInitializeRequest(body)) {
      throw badFields([{ field: MCP_SESSION_HEADER, message: `The ${MCP_SESSION_HEADER} header is required: start a session with an initialize request first` }]);
    }
    const closing = new AbortController();
    const server = buildMcpServer(this.turns, { projectId: who.projectId, keyId: who.keyId, closed: closing.signal }, VERSION);
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (sid) => {
        this.sessions.set(sid, { transport, server, keyId: who.keyId, projectId: who.projectId, closing, lastUsed: Date.now() });
      },
    });
    transport.onclose = () => {
      if (transport.sessionId) this.sessions.delete(transport.sessionId);
      closing.abort();
    };
    await server.connect(transport);
    await transport.handleRequest(req, res, body);
  }

  get size(): number {
    return this.sessions.size;
  }

  private closeIdle(): void {
    const before = Date.now() - IDLE_MS;
    for (const s of [...this.sessions.values()]) if (s.lastUsed < before) void s.server.close();
  }

  async onModuleDestroy(): Promise<void> {
    clearInterval(this.sweeper);
    await Promise.all([...this.sessions.values()].map((s) => s.server.close()));
  }
}
