import { once } from 'node:events';
import { mkdtempSync, writeFileSync } from 'node:fs';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from 'pg';
import { assembledAnswer, NOTE_SERVER, NOTE_TOOL, startNoteTool, type NoteTool } from '../faults/continuation';
import { readSse, type Instance, type Received } from '../faults/harness';
import type { TestApp } from '../support/app';
import { createTestDatabase, describeOnPostgres } from '../support/db';
import { answerFrames, modelEnv, onBody, openAiFrame, serveModel, toolCallFrames } from '../support/openai-frames';
import { sse } from '../support/sse-client';
import { buildService, reviveA, startTwoInstances, stopTwoInstances } from '../support/two-instances';
import { waitFor } from '../support/wait-for';

/**
 * Issue 44, the two gaps of the two-stage side: a turn whose instance dies before its first tool
 * phase ended (nothing ran but a model call) and one whose instance dies while a call runs are
 * continued by another instance. A is the built service in a child process, killed with
 * SIGKILL; B an app in this process on the same PostgreSQL takes the run over. The client reads
 * A's stream, then reconnects to B with Last-Event-ID: one gap-free sequence, one `done`, and
 * the answer it assembles (chunks after the takeover's `supersedesFromSeq` cut dropped) is the
 * stored one. Tools are counted where they run: the MCP note tool (no readOnlyHint) by its
 * note, fetch_page at the page it fetches.
 */
const LEASE_MS = 3000;
const ANSWER = ['All', 'is', 'well.'];

describeOnPostgres('two instances and a SIGKILL need PostgreSQL', 'a two-stage turn cut off before its first checkpoint or while a call ran is continued by another instance', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let model: Server;
  let port = 0;
  let pg: Client;
  let note: NoteTool;
  let a: Instance;
  let b: TestApp;
  let env: Record<string, string>;
  /** what the model does when no tool result is in its request: answer (and hang the first time), or call a tool */
  let mode: 'hang-first-answer' | 'note' | 'page' = 'hang-first-answer';
  let marker = '';
  let answers = 0;
  let pages = 0;
  /** the model requests' bodies, in order */
  let bodies: string[] = [];

  const kill = () => a.child.kill('SIGKILL');

  function handle(req: IncomingMessage, res: ServerResponse): void {
    onBody(req, (body) => {
      if (req.url?.startsWith('/page')) {
        // the first fetch is cut off: A dies while it waits for the page
        if (++pages === 1) return kill();
        res.writeHead(200, { 'content-type': 'text/html' }).end('<html><head><title>page</title></head><body><p>the page is fine</p></body></html>');
        return;
      }
      bodies.push(body);
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const call = (name: string, args: unknown) => res.end(toolCallFrames(`call_${bodies.length}`, name, args));
      const offered = (JSON.parse(body) as { tools?: unknown[] }).tools?.length ?? 0;
      // (the system prompt itself names "[Tool result #N …]")
      const result = body.includes('[Tool result #1');
      if (!result && offered > 0 && mode === 'note') return call(NOTE_TOOL, { note: marker });
      if (!result && offered > 0 && mode === 'page') return call('fetch_page', { url: `http://127.0.0.1:${port}/page` });
      if (mode === 'hang-first-answer' && ++answers === 1) {
        for (const w of ANSWER.slice(0, 2)) res.write(openAiFrame({ content: `${w} ` }));
        return; // never ends: A is killed while it streams
      }
      res.end(answerFrames(ANSWER));
    });
  }

  beforeAll(async () => {
    buildService();
    db = await createTestDatabase();
    ({ server: model, port } = await serveModel(handle));
    note = await startNoteTool();
    const mcpConfig = join(mkdtempSync(join(tmpdir(), 'orion-cutoff-mcp-')), 'mcp.json');
    writeFileSync(mcpConfig, JSON.stringify({ mcpServers: { [NOTE_SERVER]: { url: note.url } } }));
    env = {
      DATABASE_URL: db.url,
      ...modelEnv(port),
      TWO_STAGE_ENABLED: 'true',
      RUN_LEASE_MS: String(LEASE_MS),
      MCP_CONFIG: mcpConfig,
      // the note tool runs as the model asks (no person in the loop)
      TOOLS_APPROVAL_DEFAULT: 'none',
    };
    ({ a, b, pg } = await startTwoInstances(env, db.url));
    // both instances list the note tool before a turn offers it
    await waitFor(async () => ((await (await fetch(`${b.url}/api/tools`)).json()) as Array<{ name: string }>).some((t) => t.name === NOTE_TOOL), { what: 'the note tool on B', timeoutMs: 30_000 });
  }, 700_000);

  beforeEach(async () => {
    answers = 0;
    pages = 0;
    bodies = [];
    marker = Math.random().toString(36).slice(2, 10);
    note.set({ slow: false });
    a = await reviveA(a, env);
    await waitFor(async () => ((await (await fetch(`${a.url}/api/tools`)).json()) as Array<{ name: string }>).some((t) => t.name === NOTE_TOOL), { what: 'the note tool on A', timeoutMs: 30_000 });
  }, 120_000);

  afterAll(async () => {
    await stopTwoInstances({ a, b, pg });
    await note?.close();
    model?.closeAllConnections();
    model?.close();
    await db?.drop();
  });

  /** A turn on A until A dies (`untilKilled` kills it, or a hook does), then the client's reconnect to B: every event it got, and the run's id. */
  async function cutOff(content: string, untilKilled?: (got: Received[]) => boolean) {
    const got: Received[] = [];
    const stream = readSse(`${a.url}/api/chat/messages_two_stage`, { content }, (e) => {
      got.push(e);
      if (untilKilled?.(got)) kill();
    });
    await once(a.child, 'exit');
    await stream;
    const requestId = String(got[0].data.requestId);
    const again = await sse(`${b.url}/api/chat/runs/${requestId}/events`, { headers: { 'last-event-id': String(got.at(-1)!.id) }, timeoutMs: LEASE_MS * 20 });
    const all = [...got, ...again.events.map((e) => ({ id: Number(e.id), event: e.event, data: e.data, raw: JSON.stringify(e.data) }))];
    expect(all.map((e) => e.id)).toEqual(all.map((_, i) => i + 1));
    expect(all.filter((e) => e.event === 'done')).toHaveLength(1);
    const done = all.at(-1)!;
    expect(done).toMatchObject({ event: 'done', data: { stopReason: 'final_answer' } });
    const stored = (await pg.query<{ content: string }>(`SELECT content FROM chat_messages WHERE request_id = $1 AND role = 'assistant'`, [requestId])).rows;
    expect(stored.map((m) => m.content)).toEqual([done.data.fullContent]);
    expect(assembledAnswer(all)).toBe(stored[0].content);
    const run = (await pg.query('SELECT status, takeovers FROM runs WHERE request_id = $1', [requestId])).rows[0];
    expect(run).toMatchObject({ status: 'completed', takeovers: 1 });
    const start = again.events.find((e) => e.event === 'start');
    expect(start?.data).toMatchObject({ takeover: true, resumed: true });
    return { requestId, all, start: start!, done };
  }

  it('killed mid-stream of the first action phase: B runs it again from the turn start; one done, the answer once, its text before the cut dropped', async () => {
    mode = 'hang-first-answer';
    const { requestId, all, start, done } = await cutOff('How is it?', (got) => got.filter((e) => e.event === 'chunk').map((e) => String(e.data.content)).join('') === 'All is ');
    // what A streamed of the first action phase is superseded: the continuation's start names where it began
    expect(start.data.resumeFromPhaseIndex).toBe(0);
    const from = Number(start.data.supersedesFromSeq);
    expect(all.find((e) => e.id === from)).toMatchObject({ event: 'phase', data: { phase: 'action_phase', phaseIndex: 1, status: 'start' } });
    expect(all.filter((e) => e.event === 'chunk' && e.id < from)).toEqual([]);
    expect(done.data.fullContent).toBe(ANSWER.join(' '));
    expect(bodies).toHaveLength(2);
    const traced = await waitFor(async () => (await pg.query(`SELECT details FROM trace_events WHERE request_id = $1 AND type = 'run_taken_over'`, [requestId])).rows[0], { what: 'run_taken_over', timeoutMs: 10_000 });
    expect(traced.details).toMatchObject({ outcome: 'continued', route: 'two-stage', checkpoint: 0 });
  }, 120_000);

  it('killed while a tool that is not read-only ran: it is not run again, the model reads `interrupted`, and the turn completes', async () => {
    mode = 'note';
    note.set({ slow: true, hook: kill });
    const { requestId, all, done } = await cutOff(`Note ${marker}`);
    // it ran once, on A (counted at the tool); B did not run it again
    expect(note.executions(marker)).toBe(1);
    expect(all.filter((e) => e.event === 'tool_progress' && e.data.action !== 'calling')).toEqual([
      expect.objectContaining({ data: expect.objectContaining({ tool: NOTE_TOOL, action: 'failed', outcome: 'interrupted', isError: true }) }),
    ]);
    // the model was told, as a tool result, that the call may or may not have run
    expect(bodies.at(-1)).toContain(`${NOTE_TOOL} {\\"note\\":\\"${marker}\\"} — interrupted (it may or may not have run; it was not run again)`);
    // traced like any call (GET /api/trace shows it)
    const traced = (await pg.query(`SELECT details FROM trace_events WHERE request_id = $1 AND type = 'tool_result'`, [requestId])).rows.map((r) => r.details);
    expect(traced).toEqual([expect.objectContaining({ name: NOTE_TOOL, outcome: 'interrupted' })]);
    expect(done.data.fullContent).toBe(ANSWER.join(' '));
  }, 120_000);

  it('killed while a read-only tool ran: B runs it again, and the turn completes with its result', async () => {
    mode = 'page';
    const { all, done } = await cutOff('Fetch the page');
    // the fetch cut off on A, then B's
    expect(pages).toBe(2);
    expect(all.filter((e) => e.event === 'tool_progress' && e.data.action !== 'calling')).toEqual([
      expect.objectContaining({ data: expect.objectContaining({ tool: 'fetch_page', action: 'completed', outcome: 'success' }) }),
    ]);
    expect(bodies.at(-1)).toContain('the page is fine');
    expect(done.data.fullContent).toBe(ANSWER.join(' '));
  }, 120_000);
});
