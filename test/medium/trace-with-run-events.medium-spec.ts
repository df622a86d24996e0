import type { DataSource } from 'typeorm';
import { LeaseLostError, RunEventRepository } from '../../src/runs/repositories/run-event.repository';
import type { RunEventWriter } from '../../src/runs/run-event-writer.service';
import type { TraceWriterService } from '../../src/trace/trace-writer.service';
import type { DatabaseContext } from '../support/db-context';
import { startRunTraceContext, type RunTraceContext } from '../support/run-trace-context';

/**
 * A run's trace records ride the statement that stores its events (PGlite here, PostgreSQL on
 * test:db): a record made before an event was handed over is committed by the same transaction
 * as the event (same xmin), so an instance killed after the event was stored cannot have lost it.
 */
describe('trace records stored with their run events (medium)', () => {
  let db: DatabaseContext;
  let ds: DataSource;
  let writer: RunEventWriter;
  let trace: TraceWriterService;
  let open: RunTraceContext['open'];

  beforeAll(async () => {
    ({ db, ds, writer, trace, open } = await startRunTraceContext());
  });
  afterAll(async () => {
    await db?.close();
  });
  // nothing queued and no flush timer left by the previous test: each test's records are taken by its own statements
  beforeEach(() => trace.flush());

  const rows = (from: number, n: number) => Array.from({ length: n }, (_, i) => ({ seq: from + i, type: 'chunk', data: { seq: from + i, content: `c${from + i}` } }));
  const callTrace = (requestId: string, callId: string) => trace.record({ requestId, projectId: 'p', type: 'tool_result', details: { callId } });
  /** the run's trace records (callIds in id order) and the transactions that stored them */
  const traced = async (requestId: string) => {
    const got: Array<{ call: string; x: string }> = await ds.query(`SELECT details->>'callId' AS call, xmin::text AS x FROM trace_events WHERE request_id = $1 ORDER BY id`, [requestId]);
    return { calls: got.map((r) => r.call), commits: [...new Set(got.map((r) => r.x))] };
  };
  /** the transactions that stored the run's event rows */
  const eventCommits = async (requestId: string) =>
    ((await ds.query(`SELECT DISTINCT xmin::text AS x FROM run_events WHERE request_id = $1`, [requestId])) as Array<{ x: string }>).map((r) => r.x);

  it("commits a run's trace records made before its events in the events' own statement, in the order they were made", async () => {
    const id = await open();
    const other = await open();
    callTrace(id, 'c1');
    callTrace(id, 'c2');
    callTrace(other, 'o1');
    trace.record({ type: 'tool_registration', details: { name: 'outside any run' } });
    await writer.append(id, 'me', rows(1, 2));
    // stored by the events' transaction: not left for the trace timer
    const t = await traced(id);
    expect(t.calls).toEqual(['c1', 'c2']);
    expect(t.commits).toEqual(await eventCommits(id));
    // another run's records and records of no run are not carried: the trace writer's own flush stores them
    await trace.flush();
    const o = await traced(other);
    expect(o.calls).toEqual(['o1']);
    expect(o.commits).not.toEqual(t.commits);
    // the closing statement carries them too
    callTrace(id, 'c3');
    await writer.append(id, 'me', [{ seq: 3, type: 'done', data: { seq: 3 } }], { status: 'completed', stopReason: 'final_answer' });
    const after = await traced(id);
    expect(after.calls).toEqual(['c1', 'c2', 'c3']);
    expect(after.commits).toEqual(await eventCommits(id));
  });

  it("stores the trace records of a fenced run's statement, its own and the other runs', once each", async () => {
    const mine = await open('me');
    const taken = await open('someone-else');
    callTrace(mine, 'm1');
    callTrace(taken, 't1');
    const results = await Promise.allSettled([writer.append(mine, 'me', rows(1, 2)), writer.append(taken, 'me', rows(1, 2))]);
    expect(results[0].status).toBe('fulfilled');
    expect((results[1] as PromiseRejectedResult).reason).toBeInstanceOf(LeaseLostError);
    const [m, t] = [await traced(mine), await traced(taken)];
    expect(m.calls).toEqual(['m1']);
    expect(t.calls).toEqual(['t1']);
    expect(t.commits).toEqual(m.commits);
    expect(m.commits).toEqual(await eventCommits(mine));
    await trace.flush();
    expect((await traced(mine)).calls).toEqual(['m1']);
    expect((await traced(taken)).calls).toEqual(['t1']);
  });

  it('a grouped statement that fails and is retried run by run loses and repeats no trace record; a trace row that cannot be stored fails no run', async () => {
    const good = await open();
    const bad = await open();
    const poisoned = await open();
    await writer.append(bad, 'me', rows(1, 1));
    callTrace(good, 'g1');
    callTrace(bad, 'b1');
    callTrace(poisoned, 'p1');
    // a type longer than trace_events.type (48) fails the statement that carries it
    trace.record({ requestId: poisoned, projectId: 'p', type: 'x'.repeat(60), details: {} });
    callTrace(poisoned, 'p2');
    const droppedBefore = trace.droppedEvents;
    const results = await Promise.allSettled([writer.append(good, 'me', rows(1, 2)), writer.append(bad, 'me', rows(1, 1)), writer.append(poisoned, 'me', rows(1, 1))]);
    // the bad run's seq is written twice: it fails alone; the poisoned run's events are stored without the bad trace row
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect((await traced(good)).commits).toEqual(await eventCommits(good));
    await trace.flush();
    expect((await traced(good)).calls).toEqual(['g1']);
    expect((await traced(bad)).calls).toEqual(['b1']);
    expect((await traced(poisoned)).calls).toEqual(['p1', 'p2']);
    // the one row that cannot be stored is counted, as any lost trace event
    expect(trace.droppedEvents - droppedBefore).toBe(1);
    expect(trace.queued).toBe(0);
  });
  it('a trace record that cannot be stored costs a grouped statement one retry, not one per run, and is not carried again', async () => {
    const ids = [await open(), await open(), await open()];
    ids.forEach((id, i) => callTrace(id, `k${i}`));
    trace.record({ requestId: ids[1], projectId: 'p', type: 'x'.repeat(60), details: {} });
    const repo = db.ctx.get(RunEventRepository);
    const attempts: number[] = [];
    const original = repo.appendFencedMany.bind(repo);
    const spy = jest.spyOn(repo, 'appendFencedMany').mockImplementation((appends, carried) => {
      attempts.push(appends.length);
      return original(appends, carried);
    });
    const droppedBefore = trace.droppedEvents;
    try {
      await Promise.all(ids.map((id) => writer.append(id, 'me', rows(1, 2))));
      // the failed statement with the trace, then the same three runs without it: no run-by-run retries
      expect(attempts).toEqual([3, 3]);
      // the runs' next events are not held back by the put-back records: one statement
      await Promise.all(ids.map((id) => writer.append(id, 'me', rows(3, 1))));
      expect(attempts).toEqual([3, 3, 3]);
    } finally {
      spy.mockRestore();
    }
    await trace.flush();
    for (const [i, id] of ids.entries()) {
      expect((await eventCommits(id)).length).toBeGreaterThan(0);
      expect((await traced(id)).calls).toEqual([`k${i}`]);
    }
    expect(trace.droppedEvents - droppedBefore).toBe(1);
    expect(trace.queued).toBe(0);
  });
});
