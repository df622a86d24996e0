import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Injectable } from '@nestjs/common';
import { z } from 'zod';
import { KeyedProgressStore } from '../../src/database/keyed-progress.store';
import { startApp, type TestApp } from '../support/app';
import { startHttpMcpServer, type HttpMcpTestServer } from '../support/mcp-http-server';
import { ReplayServer, respond } from '../support/replay-server';
import { waitFor } from '../support/wait-for';

const LEASE_MS = 2000;
const RECORD = 'note__record_note';

/**
 * The instance of the first attempt freezes: its heartbeat stops (the only stand-in here; one
 * process cannot host a dead instance on PGlite). Everything else is real: the database, HTTP,
 * the model server, the MCP tool.
 */
@Injectable()
class FreezingProgressStore extends KeyedProgressStore {
  static frozenKey = '';
  private static first = new Map<string, string>();

  override async heartbeat(projectId: string, key: string, owner: string): Promise<boolean> {
    if (!FreezingProgressStore.first.has(key)) FreezingProgressStore.first.set(key, owner);
    if (key === FreezingProgressStore.frozenKey && FreezingProgressStore.first.get(key) === owner) return true;
    return super.heartbeat(projectId, key, owner);
  }
}

/**
 * Issue 44, tool-only part, on both databases: a keyed execution whose instance stopped renewing
 * its heartbeat while a call with a side effect ran is taken over by the retry after
 * RUN_LEASE_MS and continued from its last finished call (the cut-off call `interrupted`, the
 * rest run, the model not asked again). When the frozen attempt comes back, its writes are
 * refused: it runs nothing more, and its client gets the continued execution's result.
 */
describe('a keyed tool-only execution whose instance froze mid-call is continued by the retry', () => {
  let t: TestApp;
  let model: ReplayServer;
  let mcp: HttpMcpTestServer;
  const runs = new Map<string, number>();
  let release: () => void = () => undefined;
  let hung: () => void = () => undefined;

  beforeAll(async () => {
    model = await ReplayServer.start();
    mcp = await startHttpMcpServer((s) => {
      s.registerTool('record_note', { description: 'Records a note (a side effect)', inputSchema: { note: z.string() } }, async ({ note }) => {
        runs.set(note, (runs.get(note) ?? 0) + 1);
        if (note === 'f2') {
          hung();
          await new Promise<void>((resolve) => (release = resolve));
        }
        return { content: [{ type: 'text' as const, text: `noted ${note}` }] };
      });
    });
    const config = join(mkdtempSync(join(tmpdir(), 'orion-keyed-mcp-')), 'mcp.json');
    writeFileSync(config, JSON.stringify({ mcpServers: { note: { url: mcp.url } } }));
    t = await startApp(
      { LLM_PROVIDER: 'openai', LLM_BASE_URL: model.openAiBaseUrl, LLM_MODEL: 'm', RUN_LEASE_MS: String(LEASE_MS), MCP_CONFIG: config, TOOLS_APPROVAL_DEFAULT: 'none' },
      { override: (b) => b.overrideProvider(KeyedProgressStore).useClass(FreezingProgressStore) },
    );
    await waitFor(async () => (await (await fetch(`${t.url}/api/tools`)).text()).includes(RECORD), { what: 'the MCP tool', timeoutMs: 30_000 });
  }, 120_000);

  afterAll(async () => {
    release();
    await t?.close();
    await mcp?.close();
    await model?.close();
  });

  it('the retry continues it: the cut-off call interrupted and not run again, the rest run once, the model asked once; the thawed attempt runs nothing more and answers that result', async () => {
    const key = 'k-frozen';
    FreezingProgressStore.frozenKey = key;
    model.enqueue(respond.turn(['f1', 'f2', 'f3'].map((note, i) => ({ toolCall: { name: RECORD, args: { note }, id: `c${i}` } }))));
    const body = JSON.stringify({ userInput: 'notes', mode: 'Classic', options: { maxCalls: 3 } });
    const send = () => fetch(`${t.url}/api/orchestration/execute`, { method: 'POST', headers: { 'content-type': 'application/json', 'idempotency-key': key }, body });
    const started = new Promise<void>((resolve) => (hung = resolve));
    const first = send();
    await started;

    const retry = await send();
    expect(retry.status).toBe(200);
    const result = (await retry.json()) as { executions: Array<{ outcome: string; resultObject: { message?: string } }>; decidedCalls: unknown[] };
    expect(result.executions.map((e) => e.outcome)).toEqual(['success', 'interrupted', 'success']);
    expect(result.executions[1].resultObject.message).toContain('may or may not have run');
    expect(model.chatRequests).toHaveLength(1);
    expect([runs.get('f1'), runs.get('f2'), runs.get('f3')]).toEqual([1, 1, 1]);

    // the frozen attempt's call returns: what it stores is refused, it runs no further call
    release();
    const late = await first;
    expect(late.status).toBe(200);
    expect(await late.json()).toEqual(result);
    expect([runs.get('f1'), runs.get('f2'), runs.get('f3')]).toEqual([1, 1, 1]);
    expect(model.chatRequests).toHaveLength(1);
  }, 60_000);
});
