import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { startApp, type TestApp } from '../support/app';
import { ReplayServer, respond } from '../support/replay-server';
import { waitFor } from '../support/wait-for';

/**
 * Issue 47 item 2: Orion as an MCP server at /mcp, driven by the MCP SDK's own Client over
 * Streamable HTTP. The scripted model calls list_files once, then answers; Orion runs the tool.
 */
const ROOT = 'mcp-root-key';
const ANSWER = 'The guides folder holds install.md and usage.md.';
const toolThenAnswer = () => [respond.turn([{ toolCall: { name: 'list_files', args: { path: 'guides' }, id: 'l1' } }]), respond.turn([{ text: 'The guides folder holds ' }, { text: 'install.md and usage.md.' }])];

type Structured = { answer: string; requestId: string; conversationId: string; stopReason: string; tools: Array<{ name: string; status: string }>; sources: unknown[] };

describe('MCP server (/mcp)', () => {
  let llm: ReplayServer;
  let t: TestApp;
  let keyAlpha: string;
  let keyBeta: string;
  const clients: Client[] = [];

  const api = async (path: string, init: RequestInit = {}) => fetch(`${t.url}${path}`, { ...init, headers: { authorization: `Bearer ${ROOT}`, 'content-type': 'application/json', ...init.headers } });
  const connect = async (key: string, headers: Record<string, string> = {}) => {
    const client = new Client({ name: 'orion-e2e', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${t.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${key}`, ...headers } } }));
    clients.push(client);
    return client;
  };
  const structured = (r: CallToolResult) => r.structuredContent as Structured;

  beforeAll(async () => {
    llm = await ReplayServer.start();
    t = await startApp({ LLM_PROVIDER: 'openai', LLM_BASE_URL: llm.openAiBaseUrl, LLM_MODEL: 'model-a', API_KEYS: ROOT });
    mkdirSync(join(t.workspace, 'alpha', 'guides'), { recursive: true });
    writeFileSync(join(t.workspace, 'alpha', 'guides', 'install.md'), '# Install\n');
    writeFileSync(join(t.workspace, 'alpha', 'guides', 'usage.md'), '# Usage\n');
    const key = async (name: string, project: string) => ((await (await api('/api/admin/keys', { method: 'POST', body: JSON.stringify({ name, projects: [project], role: 'user' }) })).json()) as { key: string }).key;
    keyAlpha = await key('alpha app', 'alpha');
    keyBeta = await key('beta app', 'beta');
  }, 120_000);
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
    await t?.close();
    await llm?.close();
  });
  beforeEach(() => llm.reset());

  it('lists ask, list_conversations and get_run_trace, described for a model to pick', async () => {
    const client = await connect(keyAlpha);
    const { tools } = await client.listTools();
    expect(tools.map((x) => x.name).sort()).toEqual(['ask', 'get_answer', 'get_run_trace', 'list_conversations']);
    const ask = tools.find((x) => x.name === 'ask')!;
    expect(ask.description).toMatch(/sources/);
    expect(ask.description).toMatch(/conversationId/);
    expect(ask.inputSchema.required).toEqual(['question']);
    expect(Object.keys(ask.inputSchema.properties ?? {}).sort()).toEqual(['conversationId', 'question', 'route']);
    expect(ask.outputSchema?.properties).toHaveProperty('sources');
  });

  it('ask runs a turn in the key\'s project: progress from the tool steps, then the answer; conversationId continues it', async () => {
    const client = await connect(keyAlpha);
    llm.enqueue(...toolThenAnswer());
    const progress: string[] = [];
    const result = (await client.callTool({ name: 'ask', arguments: { question: 'What is in the guides folder?' } }, undefined, { onprogress: (p) => progress.push(String(p.message)) })) as CallToolResult;
    expect(result.isError).toBeFalsy();
    const out = structured(result);
    expect(out.answer).toBe(ANSWER);
    expect(out.stopReason).toBe('final_answer');
    expect(out.tools).toEqual([{ name: 'list_files', status: 'completed', outcome: 'success' }]);
    expect((result.content[0] as { text: string }).text).toContain(ANSWER);
    expect(progress).toEqual([`Started turn ${out.requestId} in conversation ${out.conversationId}`, 'Running list_files {"path":"guides"}', expect.stringMatching(/^list_files completed in \d+ ms$/)]);
    // Orion ran the tool in project alpha's folder: the model saw its result
    const toolMessage = (llm.chatRequests[1].body as { messages: Array<{ role: string; content: string }> }).messages.find((m) => m.role === 'tool');
    expect(toolMessage?.content).toContain('install.md');
    // the run is stored in alpha like any other
    const run = (await (await api(`/api/chat/runs/${out.requestId}`)).json()) as { projectId: string; status: string };
    expect(run).toMatchObject({ projectId: 'alpha', status: 'completed' });

    llm.reset();
    llm.enqueue(respond.turn([{ text: 'Two files.' }]));
    const next = structured((await client.callTool({ name: 'ask', arguments: { question: 'How many?', conversationId: out.conversationId } })) as CallToolResult);
    expect(next).toMatchObject({ answer: 'Two files.', conversationId: out.conversationId });
    const seen = (llm.chatRequests[0].body as { messages: Array<{ role: string; content: string }> }).messages.map((m) => m.content);
    expect(seen).toEqual(expect.arrayContaining(['What is in the guides folder?', ANSWER, 'How many?']));

    const listed = (await client.callTool({ name: 'list_conversations', arguments: {} })) as CallToolResult;
    expect((listed.structuredContent as { conversations: Array<{ id: string }> }).conversations.map((c) => c.id)).toEqual([out.conversationId]);
    const trace = (await client.callTool({ name: 'get_run_trace', arguments: { requestId: out.requestId } })) as CallToolResult;
    expect(trace.isError).toBeFalsy();
    expect((trace.structuredContent as { events: Array<{ type: string }> }).events.map((e) => e.type)).toEqual(expect.arrayContaining(['run_started', 'tool_call', 'run_completed']));
  });

  it('cancelling the call (notifications/cancelled) cancels the Orion run and aborts its model request', async () => {
    const client = await connect(keyAlpha);
    // the second model call starts its answer, then never finishes
    llm.enqueue(respond.turn([{ toolCall: { name: 'list_files', args: { path: 'guides' }, id: 'l1' } }]), respond.turn([{ text: 'The guides ' }, { text: 'folder holds' }, { text: ' more' }], { faults: { stallAfter: 2 } }));
    const abort = new AbortController();
    let requestId = '';
    const call = client.callTool({ name: 'ask', arguments: { question: 'What is in the guides folder?' } }, undefined, {
      signal: abort.signal,
      onprogress: (p) => {
        requestId ||= /Started turn (\S+)/.exec(String(p.message))?.[1] ?? '';
        // cancel once the model is answering (its second request is open)
        if (/list_files completed/.test(String(p.message))) void waitFor(() => llm.chatRequests.length === 2).then(() => abort.abort());
      },
    });
    await expect(call).rejects.toThrow(/abort/i);
    expect(requestId).toMatch(/^[0-9a-f-]{36}$/);
    const run = await waitFor(async () => {
      const r = (await (await api(`/api/chat/runs/${requestId}`)).json()) as { status: string; stopReason: string };
      return r.status === 'cancelled' ? r : null;
    });
    expect(run.stopReason).toBe('cancelled');
    await waitFor(() => llm.chatRequests[1].closedEarlyAt !== undefined);
  });

  it("another project's key gets nothing of this one: no conversations, no trace, no turn in its conversation, no session", async () => {
    const alpha = await connect(keyAlpha);
    llm.enqueue(respond.turn([{ text: 'Hello.' }]));
    const own = structured((await alpha.callTool({ name: 'ask', arguments: { question: 'hi' } })) as CallToolResult);
    const beta = await connect(keyBeta);
    const listed = (await beta.callTool({ name: 'list_conversations', arguments: {} })) as CallToolResult;
    expect(listed.structuredContent).toEqual({ projectId: 'beta', conversations: [] });
    const trace = (await beta.callTool({ name: 'get_run_trace', arguments: { requestId: own.requestId } })) as CallToolResult;
    expect(trace.isError).toBe(true);
    expect(JSON.stringify(trace.content)).not.toContain('run_started');
    const asked = (await beta.callTool({ name: 'ask', arguments: { question: 'and?', conversationId: own.conversationId } })) as CallToolResult;
    expect(asked.isError).toBe(true);
    expect((asked.content[0] as { text: string }).text).toMatch(/conversation_not_found/);
    expect(llm.chatRequests).toHaveLength(1);
    // naming project alpha with beta's key: refused before any session exists
    await expect(connect(keyBeta, { 'x-orion-project': 'alpha' })).rejects.toThrow(/404|Unknown project/);
    // alpha's session id with beta's key: an unknown session
    const sessionId = (alpha.transport as StreamableHTTPClientTransport).sessionId!;
    const res = await fetch(`${t.url}/mcp`, {
      method: 'POST',
      headers: { authorization: `Bearer ${keyBeta}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-session-id': sessionId },
      body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/call', params: { name: 'list_conversations', arguments: {} } }),
    });
    expect(res.status).toBe(404);
    expect(await res.text()).not.toContain(own.conversationId);
  });

  it('without a key: 401 before any MCP message is read', async () => {
    const res = await fetch(`${t.url}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: '{}' });
    expect(res.status).toBe(401);
  });
});

/**
 * The MCP Inspector's CLI mode, as a developer would point it at Orion. 0.15.0 is the last release
 * that runs on Node 20 (later ones need Node 22); its `@modelcontextprotocol/inspector` package
 * ships without the CLI it names as its bin, so its CLI package (`mcp-inspector-cli`, the same
 * `--cli` mode) is the dependency. It sends no headers, so this runs in local mode (no keys
 * configured), where every request acts as the local user.
 */
const INSPECTOR_CLI = join(__dirname, '..', '..', 'node_modules', '@modelcontextprotocol', 'inspector-cli', 'build', 'cli.js');

describe('MCP server (/mcp) through @modelcontextprotocol/inspector --cli', () => {
  let t: TestApp;
  const inspector = (...args: string[]) =>
    promisify(execFile)(process.execPath, [INSPECTOR_CLI, '--cli', `${t.url}/mcp`, '--transport', 'http', ...args], { timeout: 60_000 });

  beforeAll(async () => {
    t = await startApp({});
  }, 120_000);
  afterAll(async () => {
    await t?.close();
  });

  it('tools/list names the four tools', async () => {
    const { stdout } = await inspector('--method', 'tools/list');
    const listed = JSON.parse(stdout) as { tools: Array<{ name: string; description: string }> };
    expect(listed.tools.map((x) => x.name).sort()).toEqual(['ask', 'get_answer', 'get_run_trace', 'list_conversations']);
  });

  it('tools/call list_conversations answers with the project\'s conversations', async () => {
    const { stdout } = await inspector('--method', 'tools/call', '--tool-name', 'list_conversations', '--tool-arg', 'limit=5');
    expect(JSON.parse(stdout)).toMatchObject({ structuredContent: { projectId: 'default', conversations: [] } });
  });
});

describe('MCP server (/mcp): a turn that waits for a person', () => {
  let llm: ReplayServer;
  let t: TestApp;
  let client: Client;

  beforeAll(async () => {
    llm = await ReplayServer.start();
    t = await startApp({ LLM_PROVIDER: 'openai', LLM_BASE_URL: llm.openAiBaseUrl, LLM_MODEL: 'model-a', TOOLS_REQUIRE_APPROVAL: 'read_file' });
    mkdirSync(join(t.workspace, 'default', 'guides'), { recursive: true });
    writeFileSync(join(t.workspace, 'default', 'guides', 'install.md'), '# Install\n');
    client = new Client({ name: 'orion-e2e', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${t.url}/mcp`)));
  }, 120_000);
  afterAll(async () => {
    await client?.close().catch(() => undefined);
    await t?.close();
    await llm?.close();
  });

  it('ask answers at once with the approval instead of outwaiting the client; once decided, get_answer gives the answer', async () => {
    llm.enqueue(respond.turn([{ toolCall: { name: 'read_file', args: { path: 'guides/install.md' }, id: 'r1' } }]), respond.turn([{ text: 'It says Install.' }]));
    // shorter than any approval: before, the client's timeout cancelled the waiting run
    const waiting = (await client.callTool({ name: 'ask', arguments: { question: 'Read the install guide' } }, undefined, { timeout: 10_000 })) as CallToolResult;
    expect(waiting.isError).toBeFalsy();
    const out = waiting.structuredContent as { stopReason: string; requestId: string; approval: { approvalId: string; tool: string } };
    expect(out).toMatchObject({ stopReason: 'awaiting_approval', approval: { tool: 'read_file' } });
    const run = (await (await fetch(`${t.url}/api/chat/runs/${out.requestId}`)).json()) as { status: string };
    expect(run.status).toBe('awaiting_approval');
    const still = (await client.callTool({ name: 'get_answer', arguments: { requestId: out.requestId } })) as CallToolResult;
    expect((still.structuredContent as { stopReason: string }).stopReason).toBe('awaiting_approval');

    const decided = await fetch(`${t.url}/api/chat/runs/${out.requestId}/approvals/${out.approval.approvalId}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ decision: 'approve' }) });
    expect(decided.status).toBe(200);
    const answered = (await client.callTool({ name: 'get_answer', arguments: { requestId: out.requestId, waitSeconds: 20 } })) as CallToolResult;
    expect(answered.structuredContent).toMatchObject({ answer: 'It says Install.', stopReason: 'final_answer', tools: [{ name: 'read_file', status: 'completed' }] });
  });
});
