import { DataSource } from 'typeorm';
import { MIGRATIONS } from '../../src/database/migrations';
import { ToolRegistryService } from '../../src/tools/tool-registry.service';
import { startApp, type TestApp } from '../support/app';
import { describeOnPostgres } from '../support/db';
import { ReplayServer, respond } from '../support/replay-server';
import { sse } from '../support/sse-client';
import { probeTool } from '../support/test-tools';

const RUNS = 1000;
const EVENTS_PER_RUN = 100;
const TRACE_ROWS = 20_000;
/** A version-4 uuid (as the routes accept) made from the text `expr`, in SQL. */
const uuidOf = (expr: string) => `overlay(overlay(md5(${expr}) placing '4' from 13) placing '8' from 17)::uuid`;

/** Every row of the table, as one checksum (with its count). */
const checksum = async (ds: DataSource, table: 'run_events' | 'trace_events') => {
  const cols =
    table === 'run_events'
      ? `id || '|' || request_id || '|' || seq || '|' || coalesce(last_seq::text, '') || '|' || type || '|' || data::text || '|' || created_at::text`
      : `id || '|' || coalesce(request_id, '') || '|' || coalesce(project_id, '') || '|' || type || '|' || details::text || '|' || created_at::text`;
  const [r] = await ds.query(`SELECT count(*)::int AS n, max(id)::bigint AS max, md5(string_agg(${cols}, ',' ORDER BY id)) AS sum FROM ${table}`);
  return { n: Number(r.n), max: Number(r.max), sum: String(r.sum) };
};

/**
 * Issue 43, item 3: migration 1764540000000 converts a database of the previous release —
 * real runs made through the HTTP API, then 100,000 run events across 1,000 runs of the last
 * 40 days and 20,000 trace records — into daily partitions, every row kept (counts and
 * checksums), ids continuing, and every route answering for the old runs as before. The
 * previous release's schema is the current one taken back by the migrations' own down() (the
 * later storage lifecycle migration's first, then the partition migration's).
 * PostgreSQL only: PGlite in memory cannot be reopened by a second app on the same data.
 */
describeOnPostgres('a test database is reopened by a second app after the migration', 'the partition migration on a filled database', () => {
  let llm: ReplayServer;
  let a: TestApp;
  let b: TestApp | undefined;
  const calls: string[] = [];
  const env = () => ({ LLM_PROVIDER: 'openai', LLM_BASE_URL: llm.openAiBaseUrl, LLM_MODEL: 'scripted-model', TWO_STAGE_ENABLED: 'true' });
  const withTools = (t: TestApp) => {
    const registry = t.app.get(ToolRegistryService);
    registry.register(probeTool('probe_first', calls));
    registry.register(probeTool('probe_second', calls));
    return t;
  };

  beforeAll(async () => {
    llm = await ReplayServer.start();
    a = withTools(await startApp(env()));
  });
  afterAll(async () => {
    await b?.app.close();
    await a.close();
    await llm.close();
  });

  it('keeps every row and id, and every route answers for the old runs', async () => {
    // real runs through the API: a two-stage turn with two tool phases, and a plain answer
    llm.enqueue(
      respond.turn([{ text: 'Looking it up. ' }, { toolCall: { name: 'probe_first', args: { step: 'one' }, id: 'c1' } }]),
      respond.turn([{ toolCall: { name: 'probe_second', args: { step: 'two' }, id: 'c2' } }]),
      respond.turn([{ text: 'Parent answer.' }]),
      respond.turn([{ text: 'Plain answer.' }]),
    );
    const parent = await sse(`${a.url}/api/chat/messages_two_stage`, { body: { content: 'Find it' } });
    expect(parent.events.at(-1)!.data.stopReason).toBe('final_answer');
    const requestId = parent.events[0].data.requestId as string;
    const conversationId = parent.events[0].data.conversationId as string;
    const plain = await sse(`${a.url}/api/chat/messages_two_stage`, { body: { content: 'Hi', conversationId } });
    expect(plain.events.at(-1)!.event).toBe('done');

    const read = async (t: TestApp) => ({
      // the run's usage is a column of a later migration (1764580000000): taken back with the rest, it comes back empty
      status: JSON.stringify({ ...(await (await fetch(`${t.url}/api/chat/runs/${requestId}`)).json()), usage: undefined }),
      events: await (await fetch(`${t.url}/api/chat/runs/${requestId}/events`)).text(),
      reconnect: (await sse(`${t.url}/api/chat/runs/${requestId}/events`, { headers: { 'last-event-id': '3' } })).events,
      trace: await (await fetch(`${t.url}/api/trace?requestId=${requestId}&limit=500`)).text(),
      messages: await (await fetch(`${t.url}/api/chat/conversations/${conversationId}/messages`)).text(),
    });
    const before = await read(a);
    expect(before.reconnect.map((e) => Number(e.id))[0]).toBe(4);
    expect(JSON.parse(before.trace).length).toBeGreaterThan(0);
    await a.app.close();

    // back to the previous release's schema, then filled the way a year of turns would be
    const ds = new DataSource({ type: 'postgres', url: a.databaseUrl, migrations: MIGRATIONS, logging: false });
    await ds.initialize();
    try {
      // the partition migration undone, and every migration after it first (the storage lifecycle's)
      for (let undone = ''; undone !== 'TimePartitions1764540000000'; ) {
        [{ name: undone }] = (await ds.query(`SELECT name FROM migrations ORDER BY timestamp DESC LIMIT 1`)) as Array<{ name: string }>;
        await ds.undoLastMigration();
      }
      expect(await ds.query(`SELECT relkind FROM pg_class WHERE relname IN ('run_events', 'trace_events') ORDER BY relname`)).toEqual([{ relkind: 'r' }, { relkind: 'r' }]);
      // in the real runs' project, so the routes serve them too
      const [{ project }] = await ds.query(`SELECT project_id AS project FROM runs WHERE request_id = $1`, [requestId]);
      await ds.query(`INSERT INTO conversations (id, project_id, title) SELECT ${uuidOf(`'c' || i`)}, $1, 'bulk ' || i FROM generate_series(1, ${RUNS}) i`, [project]);
      await ds.query(`INSERT INTO runs (request_id, conversation_id, project_id, protocol, status, last_seq, created_at, updated_at)
        SELECT ${uuidOf(`'r' || i`)}, ${uuidOf(`'c' || i`)}, $1, 'two-stage', 'completed', ${EVENTS_PER_RUN}, now() - (i % 40) * interval '1 day' - (i % 24) * interval '1 hour', now()
          FROM generate_series(1, ${RUNS}) i`, [project]);
      // one in ten rows a packed row of three chunks, the rest single events
      await ds.query(`INSERT INTO run_events (request_id, seq, last_seq, type, data, created_at)
        SELECT ${uuidOf(`'r' || r`)}, s, CASE WHEN s % 10 = 0 THEN s END, CASE WHEN s % 10 = 0 THEN 'chunks' ELSE 'chunk' END,
               CASE WHEN s % 10 = 0 THEN jsonb_build_array(jsonb_build_object('content', 'x' || s)) ELSE jsonb_build_object('content', 'chunk ' || s || ' of ' || r) END,
               now() - (r % 40) * interval '1 day' + s * interval '1 second'
          FROM generate_series(1, ${RUNS}) r, generate_series(1, ${EVENTS_PER_RUN}) s`);
      await ds.query(`INSERT INTO trace_events (request_id, project_id, type, details, created_at)
        SELECT ${uuidOf(`'r' || (i % ${RUNS})`)}::text, 'bulk', 'tool_result', jsonb_build_object('n', i), now() - (i % 40) * interval '1 day'
          FROM generate_series(1, ${TRACE_ROWS}) i`);
      const events = await checksum(ds, 'run_events');
      const trace = await checksum(ds, 'trace_events');
      expect(events.n).toBeGreaterThanOrEqual(RUNS * EVENTS_PER_RUN);

      const started = Date.now();
      await ds.runMigrations({ transaction: 'all' });
      const ms = Date.now() - started;
      console.log(`partition migration: ${events.n} run events, ${trace.n} trace records in ${ms} ms`);

      expect(await checksum(ds, 'run_events')).toEqual(events);
      expect(await checksum(ds, 'trace_events')).toEqual(trace);
      expect(await ds.query(`SELECT relkind FROM pg_class WHERE relname IN ('run_events', 'trace_events') ORDER BY relname`)).toEqual([{ relkind: 'p' }, { relkind: 'p' }]);
      // one partition per day of rows (40 days, today included, and the week ahead): nothing in the default ones
      const [{ days }] = await ds.query(`SELECT count(*)::int AS days FROM pg_inherits WHERE inhparent = 'run_events'::regclass`);
      expect(days).toBeGreaterThanOrEqual(40 + 7);
      expect(await ds.query(`SELECT (SELECT count(*) FROM run_events_default)::int AS e, (SELECT count(*) FROM trace_events_default)::int AS t`)).toEqual([{ e: 0, t: 0 }]);
      // a run's events are in its start's partition, which (request_id, seq) relies on to stay unique
      await expect(ds.query(`INSERT INTO run_events (request_id, seq, type, data, run_created_at) SELECT request_id, 1, 'chunk', '{}', created_at FROM runs WHERE request_id = $1`, [requestId])).rejects.toThrow(
        /duplicate key value violates unique constraint "run_events_p\d{8}_request_id_seq_run_created_at_key"/,
      );
      await ds.query(`SELECT 1 FROM run_event_list LIMIT 1`);

      // the second app: every route as before the migration, for the old runs
      b = withTools(await startApp(env(), { databaseUrl: a.databaseUrl }));
      const after = await read(b);
      expect(after).toEqual(before);
      const [{ bulkId }] = await ds.query(`SELECT ${uuidOf(`'r7'`)} AS "bulkId"`);
      const bulk = await sse(`${b.url}/api/chat/runs/${bulkId}/events`, { headers: { 'last-event-id': '50' } });
      expect(bulk.status).toBe(200);
      expect(bulk.events.map((e) => Number(e.id))).toEqual(Array.from({ length: EVENTS_PER_RUN - 50 }, (_, i) => 51 + i));

      // fork from the old run's checkpoint: stored in today's partition, ids after every old one
      calls.length = 0;
      llm.enqueue(respond.turn([{ toolCall: { name: 'probe_second', args: { step: 'three' }, id: 'f2' } }]), respond.turn([{ text: 'Fork answer.' }]));
      const fork = await sse(`${b.url}/api/chat/runs/${requestId}/fork`, { body: { fromPhaseIndex: 2 } });
      expect(fork.events.at(-1)!.data.stopReason).toBe('final_answer');
      expect(calls).toEqual(['probe_second:three']);
      const forkId = fork.events[0].data.requestId as string;
      const [ids] = await ds.query(
        `SELECT min(id)::bigint AS min, count(*)::int AS n, bool_and(tableoid::regclass::text = 'run_events_p' || to_char(now() AT TIME ZONE 'UTC', 'YYYYMMDD')) AS today FROM run_events WHERE request_id = $1`,
        [forkId],
      );
      expect(Number(ids.min)).toBeGreaterThan(events.max);
      expect(ids.today).toBe(true);
      const [t] = await ds.query(`SELECT min(id)::bigint AS min FROM trace_events WHERE request_id = $1`, [forkId]);
      expect(Number(t.min)).toBeGreaterThan(trace.max);
      const forkEvents = await (await fetch(`${b.url}/api/chat/runs/${forkId}/events`)).text();
      expect(forkEvents).toContain('Fork answer.');
      // and the parent is still answered as before
      expect((await read(b)).events).toBe(before.events);
    } finally {
      await ds.destroy();
    }
  }, 120_000);
});
