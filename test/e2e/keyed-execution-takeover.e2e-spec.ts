import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import type { Instance } from '../faults/harness';
import { startApp, type TestApp } from '../support/app';
import { createTestDatabase, describeOnPostgres } from '../support/db';
import { startHttpMcpServer, type HttpMcpTestServer } from '../support/mcp-http-server';
import { ReplayServer, respond } from '../support/replay-server';
import { buildService, killA, reviveA, startA } from '../support/two-instances';
import { waitFor } from '../support/wait-for';

/**
 * Issue 44, tool-only part: a keyed tool-only execution whose instance died is continued by the
 * client's retry (same Idempotency-Key and body) on another instance. A is the built service in
 * a child process, killed with SIGKILL while one of the decided calls runs; B an app in this
 * process on the same PostgreSQL. The tools are an MCP server in this process that counts each
 * execution: `record_note` has a side effect (no readOnlyHint), `peek_note` is annotated
 * `readOnlyHint: true`. The retry on B gets the complete result, the model having been asked once.
 */
const LEASE_MS = 3000;
const RECORD = 'note__record_note';
const PEEK = 'note__peek_note';

describeOnPostgres('two instances and a SIGKILL need PostgreSQL', 'a keyed tool-only execution whose instance died is continued by the retry', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let model: ReplayServer;
  let mcp: HttpMcpTestServer;
  let a: Instance;
  let b: TestApp;
  let env: Record<string, string>;
  const runs = new Map<string, number>();
  /** the note whose call never returns (the instance is killed while it runs), and a call to learn it started */
  let hangOn = '';
  let hung: () => void = () => undefined;
  const never = new Promise<never>(() => undefined);

  const tool = (name: string) => async ({ note }: { note: string }) => {
    const key = `${name}:${note}`;
    runs.set(key, (runs.get(key) ?? 0) + 1);
    if (note === hangOn && runs.get(key) === 1) {
      hung();
      await never;
    }
    return { content: [{ type: 'text' as const, text: `${name} ${note}` }] };
  };

  beforeAll(async () => {
    buildService();
    db = await createTestDatabase();
    model = await ReplayServer.start();
    mcp = await startHttpMcpServer((s) => {
      s.registerTool('record_note', { description: 'Records a note (a side effect)', inputSchema: { note: z.string() } }, tool('record'));
      s.registerTool('peek_note', { description: 'Reads a note', inputSchema: { note: z.string() }, annotations: { readOnlyHint: true } }, tool('peek'));
    });
    const config = join(mkdtempSync(join(tmpdir(), 'orion-keyed-mcp-')), 'mcp.json');
    writeFileSync(config, JSON.stringify({ mcpServers: { note: { url: mcp.url } } }));
    env = { DATABASE_URL: db.url, LLM_PROVIDER: 'openai', LLM_BASE_URL: model.openAiBaseUrl, LLM_MODEL: 'm', RUN_LEASE_MS: String(LEASE_MS), MCP_CONFIG: config, TOOLS_APPROVAL_DEFAULT: 'none' };
    a = await startA(env);
    b = await startApp(env, { databaseUrl: db.url });
    for (const url of [a.url, b.url]) await waitFor(async () => (await (await fetch(`${url}/api/tools`)).text()).includes(PEEK), { what: 'the MCP tools', timeoutMs: 30_000 });
  }, 700_000);

  beforeEach(async () => {
    const alive = a;
    a = await reviveA(a, env);
    if (a !== alive) {
      await waitFor(async () => (await (await fetch(`${a.url}/api/tools`)).text()).includes(PEEK), { what: 'the MCP tools', timeoutMs: 30_000 });
    }
  }, 120_000);

  afterAll(async () => {
    a?.child.kill('SIGKILL');
    await b?.close();
    await mcp?.close();
    await model?.close();
    await db?.drop();
  });

  /** A decides `calls`; it is killed once the call on `cutOff` started; the retry on B answers. */
  async function killedMidway(key: string, calls: Array<[string, string]>, cutOff: string) {
    const asked = model.chatRequests.length;
    model.enqueue(respond.turn(calls.map(([name, note], i) => ({ toolCall: { name, args: { note }, id: `c${i}` } }))));
    hangOn = cutOff;
    const started = new Promise<void>((resolve) => (hung = resolve));
    const body = JSON.stringify({ userInput: `notes ${key}`, mode: 'Classic', options: { maxCalls: 3 } });
    const send = (url: string) => fetch(`${url}/api/orchestration/execute`, { method: 'POST', headers: { 'content-type': 'application/json', 'idempotency-key': key }, body });
    const first = send(a.url).catch(() => null);
    // A answering means the cut-off call never started: say what it answered
    await Promise.race([started, first.then(async (r) => Promise.reject(new Error(`A answered before the call on ${cutOff} started: ${r ? await r.text() : 'nothing'}`)))]);
    await killA(a);
    expect(await first).toBeNull(); // the client's connection died with A
    const retry = await send(b.url);
    expect(retry.status).toBe(200);
    const result = (await retry.json()) as { executions: Array<{ toolName: string; outcome: string; resultObject: { message?: string } }>; isSuccess: boolean; decidedCalls: unknown[] };
    // one more retry reads the stored result, on either instance
    const again = await send(b.url);
    expect(await again.json()).toEqual(result);
    return { result, modelCalls: model.chatRequests.length - asked };
  }

  it('a cut-off call that is not read-only is not run again and reads interrupted; the finished one ran once, the rest run; the model was asked once', async () => {
    const { result, modelCalls } = await killedMidway('k-write', [[RECORD, 'w1'], [RECORD, 'w2'], [RECORD, 'w3']], 'w2');
    expect(modelCalls).toBe(1);
    expect(result.executions.map((e) => [e.toolName, e.outcome])).toEqual([[RECORD, 'success'], [RECORD, 'interrupted'], [RECORD, 'success']]);
    expect(result.executions[1].resultObject.message).toContain('may or may not have run');
    expect(result.decidedCalls).toHaveLength(3);
    expect([runs.get('record:w1'), runs.get('record:w2'), runs.get('record:w3')]).toEqual([1, 1, 1]);
    // the operator sees the continuation where takeovers are counted
    expect(await (await fetch(`${b.url}/metrics`)).text()).toMatch(/orion_runs_taken_over_total\{route="tool-only",outcome="continued"\} [1-9]/);
  }, 120_000);

  it('a cut-off read-only call runs again; the finished call is not run again; the model was asked once', async () => {
    const { result, modelCalls } = await killedMidway('k-read', [[RECORD, 'r1'], [PEEK, 'r2'], [RECORD, 'r3']], 'r2');
    expect(modelCalls).toBe(1);
    expect(result.executions.map((e) => [e.toolName, e.outcome])).toEqual([[RECORD, 'success'], [PEEK, 'success'], [RECORD, 'success']]);
    expect(result.isSuccess).toBe(true);
    expect([runs.get('record:r1'), runs.get('peek:r2'), runs.get('record:r3')]).toEqual([1, 2, 1]);
  }, 120_000);
});
