import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { Drain } from '../../src/common/lifecycle/drain';
import { a2aClient, sendParams, userMessage } from '../support/a2a-client';
import { startApp, type TestApp } from '../support/app';
import { ReplayServer, respond } from '../support/replay-server';
import { waitFor } from '../support/wait-for';

/**
 * The MCP server's `ask` and the A2A agent's messages start turns as the chat routes do, so they
 * are held to the same admission: the budget of the API key that opened the session or sent the
 * message (and its usage is reported under that key), and a draining instance's refusal with
 * nothing stored. Driven by each ecosystem's own client.
 */
const ROOT = 'edges-root-key';
/** what a turn under a budget reserves (BUDGET_TURN_RESERVE_TOKENS) */
const RESERVE = 1000;
const usage = { promptTokens: 30, completionTokens: 10 };

const textOf = (r: CallToolResult) => (r.content as Array<{ type: string; text?: string }>).map((c) => c.text ?? '').join('');

describe('MCP and A2A turns: key budgets and draining', () => {
  let llm: ReplayServer;
  let t: TestApp;
  let key: { id: string; key: string };
  const mcpClients: McpClient[] = [];

  const api = async (path: string, init: { method?: string; body?: unknown } = {}) => {
    const res = await fetch(`${t.url}${path}`, { method: init.method ?? 'GET', headers: { authorization: `Bearer ${ROOT}`, 'content-type': 'application/json' }, ...(init.body !== undefined && { body: JSON.stringify(init.body) }) });
    const text = await res.text();
    return { status: res.status, body: (text ? JSON.parse(text) : null) as Record<string, unknown> };
  };
  const mcp = async () => {
    const client = new McpClient({ name: 'orion-e2e', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${t.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${key.key}` } } }));
    mcpClients.push(client);
    return client;
  };
  const a2a = () => a2aClient(t.url, key.key);
  const ask = async (client: McpClient, q: string) => (await client.callTool({ name: 'ask', arguments: { question: q } })) as CallToolResult;
  const conversationCount = async () => ((await api('/api/chat/conversations?projectId=alpha')).body as unknown as unknown[]).length;

  beforeAll(async () => {
    llm = await ReplayServer.start();
    // one turn at a time per key, so that the edges' turns meet the concurrent-turn limit
    t = await startApp({ LLM_PROVIDER: 'openai', LLM_BASE_URL: llm.openAiBaseUrl, LLM_MODEL: 'model-a', API_KEYS: ROOT, BUDGET_TURN_RESERVE_TOKENS: String(RESERVE), MAX_CONCURRENT_TURNS_PER_KEY: '1' });
    const created = await api('/api/admin/keys', { method: 'POST', body: { name: 'agent edge', projects: ['alpha'], role: 'user' } });
    key = created.body as unknown as { id: string; key: string };
  }, 120_000);
  afterAll(async () => {
    await Promise.all(mcpClients.map((c) => c.close().catch(() => undefined)));
    await t?.close();
    await llm?.close();
  });
  beforeEach(() => llm.reset());

  it("refuses an MCP ask and an A2A message past the budget of the key that sent them, before any model call", async () => {
    expect((await api(`/api/admin/keys/${encodeURIComponent(key.id)}/budget`, { method: 'PUT', body: { period: 'day', tokens: RESERVE - 1 } })).status).toBe(200);
    try {
      const before = await conversationCount();
      const refused = await ask(await mcp(), 'What is in the guides folder?');
      expect(refused.isError).toBe(true);
      expect(textOf(refused)).toContain('budget_exhausted');
      expect(textOf(refused)).toContain(`key ${key.id}`);
      await expect((await a2a()).sendMessage(sendParams(userMessage('What is in the guides folder?')))).rejects.toThrow(/budget_exhausted/);
      expect(llm.chatRequests).toHaveLength(0);
      expect(await conversationCount()).toBe(before);
    } finally {
      expect((await api(`/api/admin/keys/${encodeURIComponent(key.id)}/budget`, { method: 'DELETE' })).status).toBe(204);
    }
  });

  it('counts an MCP turn and an A2A task under the key that sent them in the usage report', async () => {
    llm.enqueue(respond.turn([{ text: 'Hello from MCP.' }, { finish: 'stop', usage }]), respond.turn([{ text: 'Hello from A2A.' }, { finish: 'stop', usage }]));
    const answered = await ask(await mcp(), 'Say hello');
    expect(answered.isError).toBeFalsy();
    const task = await (await a2a()).sendMessage(sendParams(userMessage('Say hello')));
    expect(task).toBeDefined();
    const report = await api('/api/admin/projects/alpha/usage?groupBy=key');
    const groups = report.body.groups as Array<{ group: string; turns: number; tokens: { total: number } | number }>;
    const mine = groups.find((g) => g.group === key.id);
    expect(mine?.turns).toBe(2);
  });

  it("holds MCP asks and A2A tasks to the key's concurrent-turn limit, an A2A task until it ends (past its response)", async () => {
    const client = await mcp();
    const agent = await a2a();
    const slow = () => respond.turn([{ text: 'slow ' }, { text: 'answer' }, { finish: 'stop', usage }], { faults: { delayMs: 700 } });
    // an A2A task that answers at once (returnImmediately) and runs on
    llm.enqueue(slow(), respond.turn([{ text: 'later' }, { finish: 'stop', usage }]));
    const task = await agent.sendMessage({ ...sendParams(userMessage('Take your time')), configuration: { acceptedOutputModes: [], taskPushNotificationConfig: undefined, historyLength: undefined, returnImmediately: true } as never });
    expect(task).toBeDefined();
    // its turn holds the key's one slot: an ask and another message are refused before any model call
    await expect(ask(client, 'Meanwhile?')).rejects.toThrow(/429|MAX_CONCURRENT_TURNS_PER_KEY/);
    await expect(agent.sendMessage(sendParams(userMessage('Meanwhile?')))).rejects.toThrow(/429|MAX_CONCURRENT_TURNS_PER_KEY|Too many/);
    expect(llm.chatRequests).toHaveLength(1);
    // once the task ended, the slot is back; a listing (no turn) was never held
    await client.listTools();
    // refused (429, before any model call) until the task's end gives its slot back
    const after = await waitFor(
      async () => {
        try {
          return await ask(client, 'Now?');
        } catch (err) {
          if (/429|MAX_CONCURRENT_TURNS_PER_KEY/.test(String(err))) return null;
          throw err;
        }
      },
      { timeoutMs: 20_000, what: "the task's slot back" },
    );
    expect(after.isError).toBeFalsy();
    expect(textOf(after)).toContain('later');
  });

  it('refuses to start an MCP ask or an A2A task while the instance drains, storing nothing', async () => {
    const client = await mcp();
    const agent = await a2a();
    const before = await conversationCount();
    t.app.get(Drain).start();
    // as every route that starts a turn: 503 shutting_down before the call reaches the tool
    await expect(ask(client, 'Anything')).rejects.toThrow(/503|shutting_down/);
    await expect(agent.sendMessage(sendParams(userMessage('Anything')))).rejects.toThrow(/503|shutting_down|shutting down/);
    // what starts no turn is still served
    expect((await client.listTools()).tools.length).toBeGreaterThan(0);
    expect(llm.chatRequests).toHaveLength(0);
    expect(await conversationCount()).toBe(before);
  });
});
