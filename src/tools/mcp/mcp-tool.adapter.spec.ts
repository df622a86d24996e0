import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { ToolFailure, type ToolExecutionContext } from '../tool-definition';
import { McpToolAdapter, repeatFromAnnotations } from './mcp-tool.adapter';
import type { McpServerStatus, McpToolConnection } from './mcp-server-connection';
import type { McpTransportKind } from './mcp-config';

/** A connection whose client answers callTool with `answer`. */
function fakeConnection(answer: (params: unknown, options: unknown) => Promise<unknown>, transportKind: McpTransportKind = 'stdio') {
  const calls: Array<{ params: unknown; options: unknown }> = [];
  const connection = {
    serverName: 'srv',
    transportKind,
    status: 'connected' as McpServerStatus,
    broken: [] as string[],
    connectedClient() {
      return this.status === 'connected'
        ? {
            callTool: (params: unknown, _schema: unknown, options: unknown) => {
              calls.push({ params, options });
              return answer(params, options);
            },
          }
        : undefined;
    },
    markBroken(reason: string) {
      this.broken.push(reason);
    },
  };
  return { connection, calls };
}

function adapter(connection: ReturnType<typeof fakeConnection>['connection']) {
  return new McpToolAdapter(
    { name: 'srv__echo', remoteName: 'echo', description: 'Echo', parameters: { type: 'object' } },
    connection as unknown as McpToolConnection,
    { callTimeoutMs: 1234, maxResultBytes: 4096 },
  );
}

const ctx = (signal = new AbortController().signal): ToolExecutionContext => ({ projectId: 'p', requestId: 'r', signal });

async function failure(promise: Promise<unknown>): Promise<ToolFailure> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ToolFailure);
  return err as ToolFailure;
}

describe('McpToolAdapter', () => {
  it('describes itself as an mcp:<server> tool and calls the remote name with the signal and timeout', async () => {
    const { connection, calls } = fakeConnection(async () => ({ content: [{ type: 'text', text: 'hi' }] }));
    const tool = adapter(connection);
    expect(tool).toMatchObject({ name: 'srv__echo', origin: 'mcp:srv', action: 'echo', description: 'Echo' });
    const signal = new AbortController().signal;
    await expect(tool.execute({ message: 'hi' }, ctx(signal))).resolves.toEqual({ output: { content: [{ type: 'text', text: 'hi' }] } });
    expect(calls[0].params).toEqual({ name: 'echo', arguments: { message: 'hi' } });
    expect(calls[0].options).toMatchObject({ signal, timeout: 1234 });
  });

  it('returns isError results as tool errors the model can read', async () => {
    const { connection } = fakeConnection(async () => ({ content: [{ type: 'text', text: 'bad' }], isError: true }));
    await expect(adapter(connection).execute({}, ctx())).resolves.toEqual({ output: { content: [{ type: 'text', text: 'bad' }] }, isError: true });
  });

  it('is unavailable while its server is down', async () => {
    const { connection } = fakeConnection(async () => ({ content: [] }));
    connection.status = 'failed';
    const tool = adapter(connection);
    expect(tool.isAvailable()).toBe(false);
    expect(await failure(tool.execute({}, ctx()))).toMatchObject({ outcome: 'unavailable', message: 'MCP server srv is failed' });
  });

  it.each([
    [new McpError(ErrorCode.RequestTimeout, 'Request timed out'), 'timeout'],
    [new McpError(ErrorCode.ConnectionClosed, 'Connection closed'), 'unavailable'],
    [new McpError(ErrorCode.InvalidParams, 'bad args'), 'validation_error'],
    [new McpError(ErrorCode.MethodNotFound, 'no such tool'), 'unavailable'],
    [new Error('Not connected'), 'unavailable'],
  ])('classifies %s as %s', async (error, outcome) => {
    const { connection } = fakeConnection(async () => Promise.reject(error));
    expect((await failure(adapter(connection).execute({}, ctx()))).outcome).toBe(outcome);
  });

  it('lets other errors through for the runner to classify as exceptions', async () => {
    const { connection } = fakeConnection(async () => Promise.reject(new McpError(ErrorCode.InternalError, 'boom')));
    await expect(adapter(connection).execute({}, ctx())).rejects.toThrow('boom');
  });

  it('turns an aborted signal into a timeout (TimeoutError) or keeps the cancellation', async () => {
    const rejectOnAbort = (_p: unknown, options: unknown) =>
      new Promise((_, reject) => (options as { signal: AbortSignal }).signal.addEventListener('abort', () => reject(new McpError(ErrorCode.RequestTimeout, 'aborted'))));
    const { connection } = fakeConnection(rejectOnAbort);
    const timedOut = adapter(connection).execute({}, ctx(AbortSignal.timeout(10)));
    expect((await failure(timedOut)).outcome).toBe('timeout');

    const controller = new AbortController();
    const cancelled = adapter(connection).execute({}, ctx(controller.signal));
    controller.abort();
    await expect(cancelled).rejects.toMatchObject({ name: 'AbortError' });
  });

  it('drops an HTTP connection whose server is unreachable', async () => {
    const { connection } = fakeConnection(async () => Promise.reject(new StreamableHTTPError(404, 'Error POSTing to endpoint: Session not found')), 'streamable-http');
    expect((await failure(adapter(connection).execute({}, ctx()))).outcome).toBe('unavailable');
    expect(connection.broken).toEqual(['Streamable HTTP error: Error POSTing to endpoint: Session not found']);
  });
});

describe('repeatFromAnnotations (issue 13)', () => {
  it('reruns only tools the server marks read-only', () => {
    expect(repeatFromAnnotations({ readOnlyHint: true })).toBe('rerun');
    expect(repeatFromAnnotations({ readOnlyHint: false })).toBe('refuse');
    expect(repeatFromAnnotations({})).toBe('refuse');
    expect(repeatFromAnnotations(undefined)).toBe('refuse');
  });
});
