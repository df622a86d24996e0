import { DataSource, type QueryRunner } from 'typeorm';
import { StorageMaintenanceService } from '../../src/chat/storage-maintenance.service';
import { CompactedText1764730000000 } from '../../src/database/migrations/1764730000000-compacted-text';
import { ToolRegistryService } from '../../src/tools/tool-registry.service';
import { startApp, type TestApp } from '../support/app';
import { onPostgres } from '../support/db';
import { ReplayServer, respond } from '../support/replay-server';
import { chunks, parseStream, textByPhase } from '../support/run-event-text';
import { sse, type SseEvent } from '../support/sse-client';
import { ageRun, heldRun, rowsOf } from '../support/storage-rows';
import { probeTool } from '../support/test-tools';

const json = (method: string, url: string, body?: unknown) =>
  fetch(url, { method, headers: { 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });

/**
 * Issue 43, items 1 and 2 on both databases: an ended run's chunk events are folded into one per
 * phase, and every route a user can still ask answers as documented; retention removes ended
 * runs, trace records and conversations past their (deployment or project) retention and never a
 * live or paused run's rows. The worker is run directly (no sleeps); ages are set on the rows.
 */
describe(`storage lifecycle (${onPostgres() ? 'PostgreSQL' : 'PGlite'})`, () => {
  let llm: ReplayServer;
  let t: TestApp;
  let ds: DataSource;
  let worker: StorageMaintenanceService;
  const calls: string[] = [];

  beforeAll(async () => {
    llm = await ReplayServer.start();
    t = await startApp({ LLM_PROVIDER: 'openai', LLM_BASE_URL: llm.openAiBaseUrl, LLM_MODEL: 'scripted-model', TWO_STAGE_ENABLED: 'true', RUN_COMPACT_AFTER: '1ms', STORAGE_BATCH_SIZE: '2', STORAGE_VACUUM_EVERY: '1ms' });
    t.app.get(ToolRegistryService).register(probeTool('probe_first', calls));
    ds = t.app.get(DataSource);
    worker = t.app.get(StorageMaintenanceService);
  });
  afterAll(async () => {
    await t.close();
    await llm.close();
  });
  beforeEach(() => llm.reset());

  /** A finished two-stage turn: text, a tool (checkpoint 2), more text, each in several chunks. */
  const finishedTurn = async (projectId = 'default') => {
    llm.enqueue(
      // frames apart, so that the deltas are not read together (and joined into one chunk)
      respond.turn([{ text: 'Looking ' }, { text: 'it ' }, { text: 'up. ' }, { toolCall: { name: 'probe_first', args: { step: 'one' }, id: 'c1' } }], { faults: { delayMs: 30 } }),
      respond.turn([{ text: 'The ' }, { text: 'answer ' }, { text: 'is ' }, { text: 'here.' }], { faults: { delayMs: 30 } }),
    );
    const res = await sse(`${t.url}/api/chat/messages_two_stage`, { body: { content: 'Find it', projectId } });
    expect(res.events.at(-1)!.data.stopReason).toBe('final_answer');
    return { events: res.events, requestId: String(res.events[0].data.requestId), conversationId: String(res.events[0].data.conversationId) };
  };
  const read = async (requestId: string, conversationId: string) => {
    const eventsRes = await fetch(`${t.url}/api/chat/runs/${requestId}/events`);
    return {
      run: await (await fetch(`${t.url}/api/chat/runs/${requestId}`)).json(),
      eventsStatus: eventsRes.status,
      events: parseStream(await eventsRes.text()),
      messages: await (await fetch(`${t.url}/api/chat/conversations/${conversationId}/messages`)).json(),
      trace: await (await fetch(`${t.url}/api/trace?requestId=${requestId}`)).json(),
      webhooks: await (await fetch(`${t.url}/api/chat/runs/${requestId}/webhooks`)).json(),
    };
  };

  it('compaction: one chunk per phase at its first seq, every other event and every other route unchanged; fork still works', async () => {
    const turn = await finishedTurn();
    const before = await read(turn.requestId, turn.conversationId);
    // several chunks per phase to fold (7 when no delta waited for another; a chunk may carry several under load)
    expect(chunks(before.events).length).toBeGreaterThan(2);
    expect(chunks(before.events).map((c) => c.data.content).join('')).toBe('Looking it up. \n\nThe answer is here.');

    const firstStored = async () => ((await ds.query(`SELECT min(created_at) AS at FROM run_events WHERE request_id = $1`, [turn.requestId])) as Array<{ at: Date }>)[0].at;
    const storedAt = await firstStored();
    // the partition a run's rows are in, and whether each row's partition key is the run's start
    const placement = async () =>
      (await ds.query(
        `SELECT DISTINCT e.tableoid::regclass::text AS partition, e.run_created_at = r.created_at AS at_run_start FROM run_events e JOIN runs r ON r.request_id = e.request_id WHERE e.request_id = $1`,
        [turn.requestId],
      )) as Array<{ partition: string; at_run_start: boolean }>;
    const placedBefore = await placement();
    expect(placedBefore).toEqual([{ partition: expect.stringMatching(/^run_events_p\d{8}$/), at_run_start: true }]);
    const pass = await worker.runOnce();
    expect(pass.compacted.runs).toBeGreaterThanOrEqual(1);
    // one row, which keeps the time the run's first event was stored
    expect((await ds.query(`SELECT type FROM run_events WHERE request_id = $1`, [turn.requestId])).map((r: { type: string }) => r.type)).toEqual(['events']);
    expect(new Date(await firstStored()).getTime()).toBe(new Date(storedAt).getTime());
    // and stays in the run's partition, keyed by the run's start as the writers key it
    expect(await placement()).toEqual(placedBefore);
    const after = await read(turn.requestId, turn.conversationId);

    // the events route: the folded chunk of each phase at the seq of its first chunk, the rest as sent
    expect(after.eventsStatus).toBe(200);
    const folded = chunks(after.events);
    expect(folded.length).toBe(2);
    expect(textByPhase(after.events)).toEqual(textByPhase(turn.events));
    for (const f of folded) {
      const phaseChunks = chunks(turn.events).filter((c) => c.data.phaseIndex === f.data.phaseIndex);
      expect(f.id).toBe(phaseChunks[0].id);
      expect(f.data).toEqual({ ...phaseChunks[0].data, content: phaseChunks.map((c) => c.data.content).join(''), compacted: true, throughSeq: phaseChunks.at(-1)!.data.seq });
    }
    // (the members of a data object may come in another order, as jsonb keeps them: toEqual ignores it)
    const others = (events: SseEvent[]) => events.filter((e) => e.event !== 'chunk');
    expect(others(after.events)).toEqual(others(turn.events));
    // what a user still asks for: the messages with their steps, the run, its trace, its webhook log
    expect(after.messages).toEqual(before.messages);
    expect(after.run).toEqual(before.run);
    expect(after.trace).toEqual(before.trace);
    // stored as one row now (the trace records folded); read by type, by project, after an id, as before
    expect(Number((await ds.query(`SELECT count(*) AS n FROM trace_events WHERE request_id = $1`, [turn.requestId]))[0].n)).toBe(1);
    const traceOf = async (q: string) => (await fetch(`${t.url}/api/trace?${q}`)).json() as Promise<Array<{ id: number; type: string; requestId: string }>>;
    const toolResults = before.trace.filter((r: { type: string }) => r.type === 'tool_result' || r.type === 'tool_call');
    expect(toolResults.length).toBe(2);
    expect(await traceOf(`requestId=${turn.requestId}&type=tool_call,tool_result`)).toEqual(toolResults);
    expect(await traceOf(`requestId=${turn.requestId}&limit=3`)).toEqual(before.trace.slice(0, 3));
    const ofProject = (await traceOf(`projectId=default&type=tool_result&limit=5000`)).filter((r) => r.requestId === turn.requestId);
    expect(ofProject).toEqual(toolResults.filter((r: { type: string }) => r.type === 'tool_result'));
    expect(after.webhooks).toEqual(before.webhooks);
    // the run_event_list view (docs/OPERATIONS.md, Database) lists the compacted run's events as the route sends them
    const listed = (await ds.query(`SELECT seq, type, data FROM run_event_list WHERE request_id = $1 ORDER BY seq`, [turn.requestId])) as Array<{ seq: number; type: string; data: unknown }>;
    expect(listed.map((r) => ({ id: String(r.seq), event: r.type, data: r.data }))).toEqual(after.events);
    // a Last-Event-ID inside a folded range resumes after it; after the end: 204
    const inside = chunks(turn.events)[1].id!;
    const resumed = parseStream(await (await fetch(`${t.url}/api/chat/runs/${turn.requestId}/events`, { headers: { 'last-event-id': inside } })).text());
    expect(resumed.map((e) => e.id)).toEqual(after.events.filter((e) => Number(e.id) > Number(inside)).map((e) => e.id));
    expect((await fetch(`${t.url}/api/chat/runs/${turn.requestId}/events`, { headers: { 'last-event-id': after.events.at(-1)!.id! } })).status).toBe(204);
    // compacted once: a second pass leaves it alone
    expect((await worker.runOnce()).compacted.runs).toBe(0);

    // fork from the checkpoint of the compacted run: its answer starts with the parent's text up to it
    llm.enqueue(respond.turn([{ text: 'Forked.' }]));
    const fork = await sse(`${t.url}/api/chat/runs/${turn.requestId}/fork`, { body: { fromPhaseIndex: 2 } });
    expect(fork.status).toBe(200);
    expect(fork.events.at(-1)!.data.fullContent).toBe('Looking it up. Forked.');
  });

  it('compaction vacuums the partitions it deleted rows from, so the next turns reuse the space instead of the files growing until autovacuum comes', async () => {
    const turn = await finishedTurn();
    const [{ part }] = await ds.query(`SELECT DISTINCT tableoid::regclass::text AS part FROM run_events WHERE request_id = $1`, [turn.requestId]);
    const [{ trace }] = await ds.query(`SELECT DISTINCT tableoid::regclass::text AS trace FROM trace_events WHERE request_id = $1 LIMIT 1`, [turn.requestId]);
    const vacuums = async (rel: string) => Number((await ds.query(`SELECT vacuum_count AS n FROM pg_stat_user_tables WHERE relname = $1`, [rel]))[0]?.n ?? 0);
    const before = { events: await vacuums(part), trace: await vacuums(trace) };
    let pass = await worker.runOnce();
    while (pass.compacted.runs > 0 && (await vacuums(part)) === before.events) pass = await worker.runOnce();
    // the run's partitions of run_events and trace_events were vacuumed by the pass that compacted it (no retention set here)
    expect(await vacuums(part)).toBeGreaterThan(before.events);
    expect(await vacuums(trace)).toBeGreaterThan(before.trace);
    expect((await read(turn.requestId, turn.conversationId)).eventsStatus).toBe(200);
  });

  it('reads a run compacted in the form before migration 1764730000000 (jsonb arrays) the same; the migration goes down and up with every route answering alike', async () => {
    const turn = await finishedTurn();
    expect((await worker.runOnce()).compacted.runs).toBeGreaterThanOrEqual(1);
    const compacted = await read(turn.requestId, turn.conversationId);
    const listed = async () => (await ds.query(`SELECT seq, type, data FROM run_event_list WHERE request_id = $1 ORDER BY seq`, [turn.requestId])) as unknown[];
    const listedCompacted = await listed();
    expect(listedCompacted.length).toBe(compacted.events.length);
    // the run's events and its trace records are each one JSON text now, arrays before
    const forms = async () =>
      ((await ds.query(`SELECT (SELECT jsonb_typeof(data) FROM run_events WHERE request_id = $1) AS events, (SELECT jsonb_typeof(details->'records') FROM trace_events WHERE request_id = $1::text) AS trace`, [turn.requestId])) as unknown[])[0];
    expect(await forms()).toEqual({ events: 'string', trace: 'string' });
    const migration = new CompactedText1764730000000();
    // its statements through the data source, not a query runner of their own: PGlite's one connection stays free for the routes
    const q = { query: (sql: string, params?: unknown[]) => ds.query(sql, params) } as unknown as QueryRunner;
    await migration.down(q);
    expect(await forms()).toEqual({ events: 'array', trace: 'array' });
    expect(await read(turn.requestId, turn.conversationId)).toEqual(compacted);
    expect(await listed()).toEqual(listedCompacted);
    await migration.up(q);
    expect(await read(turn.requestId, turn.conversationId)).toEqual(compacted);
    expect(await listed()).toEqual(listedCompacted);
    // a fork from the run in the old form still starts from its text up to the checkpoint
    llm.enqueue(respond.turn([{ text: 'Forked.' }]));
    const fork = await sse(`${t.url}/api/chat/runs/${turn.requestId}/fork`, { body: { fromPhaseIndex: 2 } });
    expect(fork.events.at(-1)!.data.fullContent).toBe('Looking it up. Forked.');
  });

  it('retention by project: expired runs, trace and conversations go, other projects and live or paused runs keep every row', async () => {
    // the project's own values over the deployment's (unset here: kept for ever)
    const put = await json('PUT', `${t.url}/api/admin/projects/expiring/retention`, { runs: '1h', trace: '1h', conversations: '1h' });
    expect(put.status).toBe(200);
    expect(await put.json()).toMatchObject({ projectId: 'expiring', project: { runs: '1h', trace: '1h', conversations: '1h' }, deployment: { runs: null, trace: null, conversations: null }, effective: { runs: '1h' } });

    const expired = await finishedTurn('expiring');
    const otherProject = await finishedTurn('default');
    const recent = await finishedTurn('expiring');
    await ageRun(ds, expired.requestId, expired.conversationId);
    await ageRun(ds, otherProject.requestId, otherProject.conversationId);
    const held = await Promise.all((['running', 'awaiting_approval', 'paused'] as const).map((s) => heldRun(ds, s, 'expiring')));
    const heldBefore = await Promise.all(held.map((h) => rowsOf(ds, h.requestId, h.conversationId)));
    expect(heldBefore.every((r) => r.runs === 1 && r.events === 3 && r.trace === 1)).toBe(true);

    const pass = await worker.runOnce();
    expect(pass.complete).toBe(true);
    expect(pass.removed).toMatchObject({ conversations: 1, runs: 1 });
    expect(pass.removed.trace_events).toBeGreaterThan(0);

    // the expired turn: every route says it is gone
    expect((await fetch(`${t.url}/api/chat/runs/${expired.requestId}`)).status).toBe(404);
    expect((await fetch(`${t.url}/api/chat/conversations/${expired.conversationId}/messages`)).status).toBe(404);
    expect(await (await fetch(`${t.url}/api/trace?requestId=${expired.requestId}`)).json()).toEqual([]);
    expect(await rowsOf(ds, expired.requestId, expired.conversationId)).toEqual({ runs: 0, events: 0, trace: 0, conversations: 0 });
    // the same age in a project without retention, and a recent turn of the project: kept
    for (const kept of [otherProject, recent]) {
      expect((await fetch(`${t.url}/api/chat/runs/${kept.requestId}`)).status).toBe(200);
      expect((await rowsOf(ds, kept.requestId, kept.conversationId)).conversations).toBe(1);
    }
    // live and paused runs, older than the retention: not a row removed
    expect(await Promise.all(held.map((h) => rowsOf(ds, h.requestId, h.conversationId)))).toEqual(held.map(() => ({ runs: 1, events: 3, trace: 1, conversations: 1 })));
    // counted and traced
    const metrics = await (await fetch(`${t.url}/metrics`)).text();
    expect(metrics).toMatch(/orion_rows_purged_total\{table="runs"\} [1-9]/);
    expect(metrics).toMatch(/orion_db_table_bytes\{table="run_events"\} [1-9]/);
    expect(metrics).toMatch(/orion_db_oldest_row_age_seconds\{table="runs"\} \d/);
    const traced = (await (await fetch(`${t.url}/api/trace?type=storage_purged`)).json()) as Array<{ details: { removed: Record<string, number> } }>;
    expect(traced.at(-1)!.details.removed).toMatchObject({ runs: 1, conversations: 1 });
  });

  it('runs only: an expired run goes with its events while its conversation and messages stay; a project may keep for ever', async () => {
    await json('PUT', `${t.url}/api/admin/projects/runs-only/retention`, { runs: '1h' });
    await json('PUT', `${t.url}/api/admin/projects/keeper/retention`, { runs: 'forever' });
    const gone = await finishedTurn('runs-only');
    const kept = await finishedTurn('keeper');
    await ageRun(ds, gone.requestId, gone.conversationId);
    await ageRun(ds, kept.requestId, kept.conversationId);
    await worker.runOnce();
    expect(await rowsOf(ds, gone.requestId, gone.conversationId)).toMatchObject({ runs: 0, events: 0, conversations: 1 });
    const messages = (await (await fetch(`${t.url}/api/chat/conversations/${gone.conversationId}/messages`)).json()) as Array<{ role: string; content: string }>;
    expect(messages.map((m) => m.role)).toEqual(['user', 'assistant']);
    expect((await fetch(`${t.url}/api/chat/runs/${gone.requestId}`)).status).toBe(404);
    expect(await rowsOf(ds, kept.requestId, kept.conversationId)).toMatchObject({ runs: 1, conversations: 1 });
  });

  it('the admin route refuses what is not a duration with a 400 and changes nothing', async () => {
    await json('PUT', `${t.url}/api/admin/projects/strict/retention`, { runs: '2d' });
    const before = await (await fetch(`${t.url}/api/admin/projects/strict/retention`)).json();
    for (const body of [{ runs: '90' }, { trace: '1h30m' }, { conversations: 5 }, { runs: '0s' }, { runs: '11000d' }, { other: '1d' }]) {
      const res = await json('PUT', `${t.url}/api/admin/projects/strict/retention`, body);
      expect([res.status, body]).toEqual([400, body]);
    }
    expect((await json('PUT', `${t.url}/api/admin/projects/not%20a%20project/retention`, { runs: '1d' })).status).toBe(400);
    expect(await (await fetch(`${t.url}/api/admin/projects/strict/retention`)).json()).toEqual(before);
    // null gives a field back to the deployment
    const reset = await (await json('PUT', `${t.url}/api/admin/projects/strict/retention`, { runs: null })).json();
    expect(reset).toMatchObject({ project: { runs: null }, effective: { runs: 'forever' } });
  });
});

describe(`storage lifecycle: the deployment's retention (${onPostgres() ? 'PostgreSQL' : 'PGlite'})`, () => {
  let t: TestApp;
  let ds: DataSource;
  beforeAll(async () => {
    t = await startApp({ RETENTION_RUNS: '1h', RETENTION_TRACE: '1h', RUN_COMPACT_AFTER: 'off' });
    ds = t.app.get(DataSource);
  });
  afterAll(() => t.close());

  const turn = async (projectId: string) => {
    const res = await sse(`${t.url}/api/chat/messages`, { body: { content: 'hello', projectId } });
    expect(res.events.at(-1)!.event).toBe('done');
    const requestId = String(res.events[0].data.requestId);
    await ds.query(`UPDATE runs SET updated_at = now() - interval '2 hours' WHERE request_id = $1`, [requestId]);
    await ds.query(`UPDATE trace_events SET created_at = now() - interval '2 hours' WHERE request_id = $1`, [requestId]);
    return requestId;
  };

  it('RETENTION_RUNS and RETENTION_TRACE apply to every project but one that keeps for ever; compaction off leaves the chunks alone', async () => {
    await json('PUT', `${t.url}/api/admin/projects/keeper/retention`, { runs: 'forever', trace: 'forever' });
    const gone = await turn('default');
    const kept = await turn('keeper');
    const pass = await t.app.get(StorageMaintenanceService).runOnce();
    expect(pass.compacted.runs).toBe(0);
    expect((await fetch(`${t.url}/api/chat/runs/${gone}`)).status).toBe(404);
    expect(await (await fetch(`${t.url}/api/trace?requestId=${gone}`)).json()).toEqual([]);
    expect((await fetch(`${t.url}/api/chat/runs/${kept}`)).status).toBe(200);
    expect(((await (await fetch(`${t.url}/api/trace?requestId=${kept}`)).json()) as unknown[]).length).toBeGreaterThan(0);
    expect(await (await fetch(`${t.url}/api/admin/projects/keeper/retention`)).json()).toMatchObject({ deployment: { runs: '1h', trace: '1h', conversations: null }, effective: { runs: 'forever', conversations: 'forever' } });
  });
});
