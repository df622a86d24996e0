import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { abortReason } from '../../common/util/abort.util';
import { redactString } from '../../common/util/redact.util';
import {
  ToolFailure,
  type RepeatPolicy,
  type ToolDefinition,
  type ToolExecuteResult,
  type ToolExecutionContext,
  type ToolOrigin,
} from '../tool-definition';
import { toMcpToolOutput } from './mcp-result.mapper';
import type { McpToolConnection } from './mcp-server-connection';

export interface McpToolSpec {
  /** namespaced registry name `<server>__<tool>` */
  name: string;
  /** the tool's name on its server */
  remoteName: string;
  description: string;
  parameters: Record<string, unknown>;
  /** from the server's annotations (see repeatFromAnnotations) */
  repeat?: RepeatPolicy;
  /** from the server's annotations (see hintsFromAnnotations): the approval default reads them */
  hints?: ToolDefinition['hints'];
}

/**
 * A tool the server annotates `readOnlyHint: true` has no side effect a second run could repeat,
 * so a repeated identical call runs again (polling a status works); the same-result strike still
 * stops a loop. Without that hint (or with `false`) the call is refused as before.
 */
export function repeatFromAnnotations(annotations: { readOnlyHint?: boolean } | undefined): RepeatPolicy {
  return annotations?.readOnlyHint === true ? 'rerun' : 'refuse';
}

/**
 * The annotations the approval policy reads (TOOLS_APPROVAL_DEFAULT=destructive): only booleans
 * the server actually gave, so a tool that says nothing stays "not known to be read-only".
 */
export function hintsFromAnnotations(annotations: { readOnlyHint?: unknown; destructiveHint?: unknown } | undefined): NonNullable<ToolDefinition['hints']> {
  return {
    ...(typeof annotations?.readOnlyHint === 'boolean' ? { readOnly: annotations.readOnlyHint } : {}),
    ...(typeof annotations?.destructiveHint === 'boolean' ? { destructive: annotations.destructiveHint } : {}),
  };
}

export interface McpCallLimits {
  /** SDK request timeout of tools/call; the runner's signal usually fires first */
  callTimeoutMs: number;
  /** cap on the JSON output (TOOL_RESULT_MAX_BYTES) */
  maxResultBytes: number;
}

/**
 * One MCP server tool as an Orion ToolDefinition. Available while its server is connected; a call
 * while it is down is ToolFailure('unavailable'). Results become JSON (see McpToolOutput); a result
 * the server flags `isError` is returned with `isError: true` for the model to read.
 */
export class McpToolAdapter implements ToolDefinition {
  readonly name: string;
  readonly description: string;
  readonly parameters: Record<string, unknown>;
  readonly origin: ToolOrigin;
  /** the remote tool name, so calls to two servers' same-named tools never share a signature */
  readonly action: string;
  readonly repeat: RepeatPolicy;
  readonly hints: NonNullable<ToolDefinition['hints']>;

  constructor(
    readonly spec: McpToolSpec,
    private readonly connection: McpToolConnection,
    private readonly limits: McpCallLimits,
    /** why the tool's pin holds it (definition changed, awaiting approval); undefined when it may run */
    private readonly held: () => string | undefined = () => undefined,
  ) {
    this.name = spec.name;
    this.description = spec.description;
    this.parameters = spec.parameters;
    this.origin = `mcp:${connection.serverName}`;
    this.action = spec.remoteName;
    this.repeat = spec.repeat ?? 'refuse';
    this.hints = spec.hints ?? {};
  }

  isAvailable(): boolean {
    return this.held() === undefined && this.connection.connectedClient() !== undefined;
  }

  unavailableReason(): string | undefined {
    return this.held() ?? (this.connection.connectedClient() ? undefined : `server ${this.connection.status}`);
  }

  async execute(args: Record<string, unknown>, ctx: ToolExecutionContext): Promise<ToolExecuteResult> {
    const held = this.held();
    if (held) throw new ToolFailure('unavailable', `tool "${this.name}" is unavailable: ${held}`);
    const client = this.connection.connectedClient();
    if (!client) {
      throw new ToolFailure('unavailable', `MCP server ${this.connection.serverName} is ${this.connection.status}`);
    }
    let result: Awaited<ReturnType<typeof client.callTool>>;
    try {
      result = await client.callTool({ name: this.spec.remoteName, arguments: args }, undefined, {
        signal: ctx.signal,
        timeout: this.limits.callTimeoutMs,
        onprogress: ctx.progress
          ? (p) =>
              ctx.progress!({
                stage: 'mcp_progress',
                message: p.message ?? (p.total ? `${p.progress}/${p.total}` : String(p.progress)),
                metadata: { progress: p.progress, total: p.total },
              })
          : undefined,
      });
    } catch (err) {
      throw this.classify(err, ctx.signal);
    }
    const output = toMcpToolOutput(result, this.limits.maxResultBytes);
    return result.isError === true ? { output, isError: true } : { output };
  }

  /** Maps a failed call to the runner's outcomes; a cancellation keeps its abort error. */
  private classify(err: unknown, signal: AbortSignal): Error {
    const server = this.connection.serverName;
    if (signal.aborted) {
      // AbortSignal.timeout() aborts with a DOMException named TimeoutError (not always `instanceof Error`).
      if ((signal.reason as { name?: string } | undefined)?.name === 'TimeoutError') {
        return new ToolFailure('timeout', `${this.name} timed out`);
      }
      return abortReason(signal);
    }
    if (err instanceof McpError) {
      switch (err.code) {
        case ErrorCode.RequestTimeout:
          return new ToolFailure('timeout', `${this.name} timed out after ${this.limits.callTimeoutMs} ms`);
        case ErrorCode.ConnectionClosed:
          return new ToolFailure('unavailable', `MCP server ${server} closed the connection`);
        case ErrorCode.InvalidParams:
          return new ToolFailure('validation_error', redactString(err.message));
        case ErrorCode.MethodNotFound:
          return new ToolFailure('unavailable', `MCP server ${server} does not offer ${this.spec.remoteName}`);
        default:
          return err;
      }
    }
    const message = err instanceof Error ? err.message : String(err);
    if (/not connected/i.test(message)) {
      return new ToolFailure('unavailable', `MCP server ${server} is not connected`);
    }
    if (this.connection.transportKind !== 'stdio' && isHttpFailure(err)) {
      // Below MCP over HTTP (refused, reset, unknown session): the server is gone or restarted.
      this.connection.markBroken(redactString(message));
      return new ToolFailure('unavailable', `MCP server ${server} is unreachable: ${redactString(message)}`);
    }
    return err instanceof Error ? err : new Error(message);
  }
}

/** fetch's network errors and the SDK's HTTP status errors (404 unknown session, 5xx…), also when wrapped. */
function isHttpFailure(err: unknown): boolean {
  if (err instanceof StreamableHTTPError) return true;
  const e = err as { name?: string; message?: string; cause?: { code?: string } };
  return (
    e?.name === 'SseError' ||
    /fetch failed|Error POSTing to endpoint|Streamable HTTP error|ECONNREFUSED|ECONNRESET|socket hang up/i.test(e?.message ?? '') ||
    /^(ECONNREFUSED|ECONNRESET|EPIPE|ETIMEDOUT|UND_ERR_)/.test(e?.cause?.code ?? '')
  );
}
