import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { startApp, type TestApp } from '../support/app';
import { captureLogs } from '../support/log-capture';
import { fixtureServer, waitForTool } from '../support/mcp-test-kit';
import { startCanary, type Canary } from '../support/net-test-servers';
import { ReplayServer, respond } from '../support/replay-server';
import { sse, type SseEvent } from '../support/sse-client';
import { waitFor } from '../support/wait-for';

/** Issue 14 item 5 over HTTP: an MCP server's env value and the model key are secrets that never leave. */
const MCP_CANARY = 'mcp-env-canary-7Q2xK9vLp4';
const KEY_CANARY = 'llm-key-canary-3Hd8sW1zR6';

describe('secret canaries', () => {
  let llm: ReplayServer;
  let canary: Canary;
  let t: TestApp;
  const captured = captureLogs();
  const logs = captured.logs;

  beforeAll(async () => {
    llm = await ReplayServer.start();
    canary = await startCanary();
    const dir = mkdtempSync(join(tmpdir(), 'orion-mcp-'));
    const fx = fixtureServer('fx');
    writeFileSync(join(dir, 'mcp.json'), JSON.stringify({ mcpServers: { fx: { command: fx.command, args: fx.args, env: { FIXTURE_TOKEN: MCP_CANARY } } } }));
    t = await startApp(
      {
        LLM_PROVIDER: 'openai', LLM_BASE_URL: llm.openAiBaseUrl, LLM_MODEL: 'scripted-model', LLM_API_KEY: KEY_CANARY,
        TWO_STAGE_ENABLED: 'true', MCP_CONFIG: join(dir, 'mcp.json'), FETCH_ALLOW_HOSTS: canary.hostPort, LOG_LEVEL: 'debug',
        // the fixture's tools are not annotated read-only: here they run as a model decides (no person in the loop)
        TOOLS_APPROVAL_DEFAULT: 'none',
      },
      captured.options,
    );
    await waitForTool(t.url, 'fx__echo_env');
  }, 30_000);
  afterAll(async () => {
    await t?.close();
    await llm?.close();
    await canary?.close();
  });
  beforeEach(() => llm.reset());

  const everything = async (events: SseEvent[], raw: string) => {
    const { requestId, conversationId } = events[0].data as { requestId: string; conversationId: string };
    const stored = await (await fetch(`${t.url}/api/chat/runs/${requestId}/events`)).text();
    const messages = await (await fetch(`${t.url}/api/chat/conversations/${conversationId}/messages`)).text();
    const trace = await (await fetch(`${t.url}/api/trace?requestId=${requestId}&limit=5000`)).text();
    // the checkpoint a paused run would resume from is stored too
    const [run] = await t.app.get(DataSource).query('SELECT checkpoint::text AS checkpoint FROM runs WHERE request_id = $1', [requestId]);
    await waitFor(() => captured.requestLogged(`/api/trace?requestId=${requestId}`), { what: 'the log line of the last request' });
    return { raw, stored, messages, trace, checkpoint: String(run?.checkpoint ?? ''), logs: logs.join('') };
  };
  const occurrences = (texts: Record<string, string>, needle: string) =>
    Object.fromEntries(Object.entries(texts).map(([where, text]) => [where, text.split(needle).length - 1]));

  describe.each([
    ['unified', '/api/chat/messages', (content: string) => ({ content })],
    ['two-stage', '/api/chat/messages_two_stage', (content: string) => ({ content, options: {} })],
  ])('on the %s route', (_protocol, route, body) => {
    const send = (content: string) => sse(`${t.url}${route}`, { body: body(content), timeoutMs: 30_000 });

    it('an MCP server`s env value echoed by its tool and repeated by the model appears nowhere: 0 in the stream, run events, message, trace and logs', async () => {
      llm.enqueue(
        respond.turn([{ toolCall: { name: 'fx__echo_env', args: { name: 'FIXTURE_TOKEN' }, id: 'c1' } }]),
        respond.turn([{ text: `The token is ${MCP_CANARY.slice(0, 9)}` }, { text: `${MCP_CANARY.slice(9)}, keep it.` }]),
      );
      const res = await send('What is the fixture token?');
      expect(res.events.at(-1)!.event).toBe('done');
      const texts = await everything(res.events, JSON.stringify(res.events));
      // the tool did run and print, and the model was called again after it
      expect(texts.trace).toContain('"outcome":"success"');
      expect(texts.logs).toContain('FIXTURE_TOKEN=[REDACTED]');
      expect(llm.chatRequests).toHaveLength(2);
      // what the model was given as the tool's result is masked too
      expect(JSON.stringify(llm.chatRequests[1].body)).not.toContain(MCP_CANARY);
      expect(occurrences(texts, MCP_CANARY)).toEqual({ raw: 0, stored: 0, messages: 0, trace: 0, checkpoint: 0, logs: 0 });
      expect(String(res.events.at(-1)!.data.fullContent)).toMatch(/^The token is .+, keep it\.$/);
    });

    it('a fetch_page call whose url carries LLM_API_KEY is refused before it runs: 0 requests reach the server, the refusal is traced without the key', async () => {
      // control: the same server is reachable without the secret, so 0 below is the refusal
      llm.enqueue(respond.turn([{ toolCall: { name: 'fetch_page', args: { url: `${canary.origin}/?q=control` }, id: 'c0' } }]), respond.turn([{ text: 'fetched' }]));
      await send('Fetch the control page.');
      const before = canary.requests.length;
      expect(before).toBeGreaterThan(0);

      llm.enqueue(
        respond.turn([{ toolCall: { name: 'fetch_page', args: { url: `${canary.origin}/?secret=${KEY_CANARY}` }, id: 'c1' } }]),
        respond.turn([{ text: 'I could not send that.' }]),
      );
      const res = await send('Send my key to the server.');
      expect(res.events.at(-1)!.event).toBe('done');
      expect(canary.requests.length - before).toBe(0);
      const texts = await everything(res.events, JSON.stringify(res.events));
      const requestId = String(res.events[0].data.requestId);
      const refusals = await (await fetch(`${t.url}/api/trace?requestId=${requestId}&type=tool_call_refused`)).json();
      expect(refusals).toMatchObject([{ type: 'tool_call_refused', details: { name: 'fetch_page', reason: 'configured_secret' } }]);
      // the stream tells the client why, in words that do not repeat the value
      expect(JSON.stringify(res.events)).toContain('refused by policy: its arguments carry a configured secret');
      // the model is told too
      expect(JSON.stringify(llm.chatRequests.at(-1)!.body)).toContain('refused by policy');
      expect(occurrences({ ...texts, toModel: JSON.stringify(llm.chatRequests.at(-1)!.body.messages.slice(-1)) }, KEY_CANARY)).toEqual({ raw: 0, stored: 0, messages: 0, trace: 0, checkpoint: 0, logs: 0, toModel: 0 });
    });
  });

  it('the tool-only route refuses the same call: 0 requests reach the server, 0 occurrences of the key in the answer, trace and logs', async () => {
    const before = canary.requests.length;
    llm.enqueue(respond.turn([{ toolCall: { name: 'fetch_page', args: { url: `${canary.origin}/?secret=${KEY_CANARY}` } } }]));
    const res = await fetch(`${t.url}/api/orchestration/execute`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ userInput: 'send my key', mode: 'Classic' }) });
    const text = await res.text();
    expect(res.status).toBe(200);
    expect(canary.requests.length - before).toBe(0);
    const body = JSON.parse(text);
    expect(body.executions[0]).toMatchObject({ toolName: 'fetch_page', outcome: 'validation_error' });
    expect(text).toContain('refused by policy');
    const trace = await (await fetch(`${t.url}/api/trace?requestId=${body.requestId}&limit=5000`)).text();
    expect(trace).toContain('tool_call_refused');
    await waitFor(() => captured.requestLogged(`/api/trace?requestId=${body.requestId}`), { what: 'the log line of the last request' });
    expect(occurrences({ answer: text, trace, logs: logs.join('') }, KEY_CANARY)).toEqual({ answer: 0, trace: 0, logs: 0 });
  });
});
