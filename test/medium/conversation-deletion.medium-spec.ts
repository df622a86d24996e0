import { randomUUID } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { RunEventEntity } from '../../src/runs/entities/run-event.entity';
import { RunEntity } from '../../src/runs/entities/run.entity';
import { RunEventRepository } from '../../src/runs/repositories/run-event.repository';
import { RunRepository } from '../../src/runs/repositories/run.repository';
import { RunDeletionService } from '../../src/runs/run-deletion.service';
import { RunsException } from '../../src/runs/runs.exception';
import { TraceDeletionService } from '../../src/trace/trace-deletion.service';
import { TraceEventEntity } from '../../src/trace/trace-event.entity';
import { TraceEventRepository } from '../../src/trace/repositories/trace-event.repository';
import { TraceWriterService } from '../../src/trace/trace-writer.service';
import { startDatabaseContext, type DatabaseContext } from '../support/db-context';

/** The raw SQL of deleting a conversation's runs, events and trace, on PGlite here and PostgreSQL on test:db. */
describe('RunDeletionService (medium)', () => {
  let db: DatabaseContext;
  let ds: DataSource;
  let deletion: RunDeletionService;
  let writer: TraceWriterService;

  beforeAll(async () => {
    db = await startDatabaseContext([TraceEventEntity, RunEntity, RunEventEntity], [TraceEventRepository, RunRepository, RunEventRepository, TraceWriterService, TraceDeletionService, RunDeletionService]);
    ds = db.ds;
    deletion = db.ctx.get(RunDeletionService);
    writer = db.ctx.get(TraceWriterService);
  });
  afterAll(async () => {
    await db?.close();
  });

  /** A conversation with `statuses.length` runs, 3 stored events and 2 trace records each. */
  const seed = async (statuses: string[]) => {
    const [{ id }] = await ds.query(`INSERT INTO conversations (project_id, title) VALUES ('p', 't') RETURNING id`);
    const requestIds: string[] = [];
    for (const status of statuses) {
      const requestId = randomUUID();
      requestIds.push(requestId);
      await ds.query(`INSERT INTO runs (request_id, conversation_id, project_id, protocol, status) VALUES ($1, $2, 'p', 'unified', $3)`, [requestId, id, status]);
      for (const seq of [1, 2, 3]) await ds.query(`INSERT INTO run_events (request_id, seq, type, data) VALUES ($1, $2, 'chunk', '{}'::jsonb)`, [requestId, seq]);
      writer.record({ requestId, projectId: 'p', type: 'run_started', details: {} });
      writer.record({ requestId, projectId: 'p', type: 'run_finished', details: {} });
    }
    return { conversationId: id as string, requestIds };
  };
  const count = async (table: string, ids: string[]) =>
    Number((await ds.query(`SELECT count(*)::int AS n FROM ${table} WHERE request_id::text = ANY($1::text[])`, [ids]))[0].n);

  it('deletes the runs, their events and their trace (queued records included), and nothing of another conversation', async () => {
    const doomed = await seed(['completed', 'paused', 'cancelled']);
    const other = await seed(['completed']);
    // settle stores the trace still queued, so the deletion sees it
    await deletion.settle();
    const deleted = await ds.transaction((m) => deletion.deleteConversationRuns(m, doomed.conversationId));
    expect(deleted).toEqual({ requestIds: doomed.requestIds, runs: 3, runEvents: 9, traceEvents: 6 });
    expect(await count('runs', doomed.requestIds)).toBe(0);
    expect(await count('run_event_list', doomed.requestIds)).toBe(0);
    expect(await count('trace_events', doomed.requestIds)).toBe(0);
    expect(await count('runs', other.requestIds)).toBe(1);
    expect(await count('run_event_list', other.requestIds)).toBe(3);
    expect(await count('trace_events', other.requestIds)).toBe(2);
  });

  it('refuses while a run is running, and the transaction leaves everything in place', async () => {
    const busy = await seed(['completed', 'running']);
    await deletion.settle();
    const attempt = ds.transaction((m) => deletion.deleteConversationRuns(m, busy.conversationId));
    await expect(attempt).rejects.toBeInstanceOf(RunsException);
    await expect(attempt).rejects.toMatchObject({ code: 'run_in_progress', details: { requestId: busy.requestIds[1] } });
    expect(await count('runs', busy.requestIds)).toBe(2);
    expect(await count('run_event_list', busy.requestIds)).toBe(6);
    expect(await count('trace_events', busy.requestIds)).toBe(4);
  });

  it('removes trace recorded after the commit in a second pass', async () => {
    const done = await seed(['completed']);
    await deletion.settle();
    await ds.transaction((m) => deletion.deleteConversationRuns(m, done.conversationId));
    writer.record({ requestId: done.requestIds[0], projectId: 'p', type: 'late', details: {} });
    expect(await deletion.deleteLateTrace(ds.manager, done.requestIds)).toBe(1);
    expect(await count('trace_events', done.requestIds)).toBe(0);
  });

  it('a conversation without runs deletes nothing', async () => {
    const [{ id }] = await ds.query(`INSERT INTO conversations (project_id, title) VALUES ('p', 'empty') RETURNING id`);
    expect(await ds.transaction((m) => deletion.deleteConversationRuns(m, id))).toEqual({ requestIds: [], runs: 0, runEvents: 0, traceEvents: 0 });
  });
});
