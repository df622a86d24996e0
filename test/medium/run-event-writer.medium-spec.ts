import { randomUUID } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { RunEventEntity } from '../../src/runs/entities/run-event.entity';
import { RunEntity } from '../../src/runs/entities/run.entity';
import { LeaseLostError, RunEventRepository } from '../../src/runs/repositories/run-event.repository';
import { RunRepository } from '../../src/runs/repositories/run.repository';
import { RunEventWriter } from '../../src/runs/run-event-writer.service';
import { startDatabaseContext, type DatabaseContext } from '../support/db-context';
import { itOnPostgres } from '../support/db';
import { waitFor } from '../support/wait-for';

/** Group commit of run events against the real database (PGlite here, PostgreSQL on test:db). */
describe('RunEventWriter (medium)', () => {
  let db: DatabaseContext;
  let ds: DataSource;
  let runs: RunRepository;
  let writer: RunEventWriter;
  let conversationId: string;

  beforeAll(async () => {
    db = await startDatabaseContext([RunEntity, RunEventEntity], [RunRepository, RunEventRepository, RunEventWriter]);
    ds = db.ds;
    runs = db.ctx.get(RunRepository);
    writer = db.ctx.get(RunEventWriter);
    [{ id: conversationId }] = await ds.query(`INSERT INTO conversations (project_id, title) VALUES ('p', 't') RETURNING id`);
  });
  afterAll(async () => {
    await db?.close();
  });

  const open = async (owner = 'me') => {
    const requestId = randomUUID();
    await runs.create({ requestId, conversationId, projectId: 'p', userMessageId: null, protocol: 'unified', options: { mode: 'act', detach: true }, leaseOwner: owner, leaseMs: 30_000 });
    return requestId;
  };
  const rows = (from: number, n: number) => Array.from({ length: n }, (_, i) => ({ seq: from + i, type: 'chunk', data: { seq: from + i, content: `c${from + i}` } }));
  const stored = async (id: string) => (await ds.query('SELECT seq FROM run_event_list WHERE request_id = $1 ORDER BY seq', [id])).map((r: { seq: number }) => r.seq);

  it('stores the events of many runs arriving together in one statement, each run in order', async () => {
    const ids = await Promise.all(Array.from({ length: 20 }, () => open()));
    const before = writer.stats.statements;
    await Promise.all(ids.map((id) => writer.append(id, 'me', rows(1, 3))));
    expect(writer.stats.statements - before).toBe(1);
    for (const id of ids) expect(await stored(id)).toEqual([1, 2, 3]);
    // while a write is in flight, what arrives meanwhile waits for the next one, not for a write each
    const next = ids.map((id) => writer.append(id, 'me', rows(4, 1)));
    const more = ids.map((id) => writer.append(id, 'me', rows(5, 1)));
    await Promise.all([...next, ...more]);
    expect(writer.stats.statements - before).toBeLessThanOrEqual(3);
    for (const id of ids) expect(await stored(id)).toEqual([1, 2, 3, 4, 5]);
  });

  it('fences each run by its own lease: a run this instance lost fails alone, the others are stored', async () => {
    const mine = await open('me');
    const taken = await open('someone-else');
    const results = await Promise.allSettled([writer.append(mine, 'me', rows(1, 2)), writer.append(taken, 'me', rows(1, 2))]);
    expect(results[0].status).toBe('fulfilled');
    expect(results[1].status).toBe('rejected');
    expect((results[1] as PromiseRejectedResult).reason).toBeInstanceOf(LeaseLostError);
    expect(await stored(mine)).toEqual([1, 2]);
    expect(await stored(taken)).toEqual([]);
  });

  it("stores a run's progress (phase, cycle, last seq) with its phase events, in the same statement, and only for runs it holds", async () => {
    const phase = (seq: number, phaseIndex: number, cycleIndex: number) => ({ seq, type: 'phase', data: { seq, phaseIndex, cycleIndex, phase: 'tool_phase', status: 'start' } });
    const progress = async (id: string) => (await runs.findById(id)) as { phaseIndex: number; cycleIndex: number; lastSeq: number };
    const a = await open();
    const b = await open();
    const taken = await open('someone-else');
    const before = writer.stats.statements;
    await Promise.allSettled([
      writer.append(a, 'me', [...rows(1, 2), phase(3, 1, 0), ...rows(4, 1), phase(5, 2, 1), ...rows(6, 1)]),
      writer.append(b, 'me', rows(1, 3)),
      writer.append(taken, 'me', [phase(1, 4, 4)]),
    ]);
    expect(writer.stats.statements - before).toBe(1);
    // the last phase event of the batch, and its seq (chunks after it are not progress)
    expect(await progress(a)).toMatchObject({ phaseIndex: 2, cycleIndex: 1, lastSeq: 5 });
    expect(await progress(b)).toMatchObject({ phaseIndex: 0, cycleIndex: 0, lastSeq: 0 });
    expect(await progress(taken)).toMatchObject({ phaseIndex: 0, cycleIndex: 0, lastSeq: 0 });
    // a closing write carries the last phase too, with the run's end
    await writer.append(a, 'me', [phase(7, 3, 1), { seq: 8, type: 'done', data: { seq: 8 } }], { status: 'completed', stopReason: 'final_answer' });
    expect(await progress(a)).toMatchObject({ phaseIndex: 3, cycleIndex: 1, lastSeq: 8, status: 'completed' });
  });

  // PostgreSQL only: PGlite is one connection, its statements never overlap
  itOnPostgres('PGlite is one connection, its statements never overlap', 'two appends of the same runs that meet on a row both store their events (they queue, neither is aborted)', async () => {
    const events = db.ctx.get(RunEventRepository);
    const phase = (seq: number) => ({ seq, type: 'phase', data: { seq, phaseIndex: seq, cycleIndex: 0, phase: 'tool_phase', status: 'start' } });
    const [id, other] = [await open(), await open()];
    // another transaction holds the run's row (as a lease renewal or a control request does) while both appends arrive
    const holder = ds.createQueryRunner();
    await holder.connect();
    await holder.startTransaction();
    try {
      await holder.query(`UPDATE runs SET updated_at = now() WHERE request_id = $1`, [id]);
      const append = (seq: number) => events.appendFencedMany([id, other].map((requestId) => ({ requestId, owner: 'me', rows: [phase(seq)] })));
      const both = Promise.allSettled([append(1), append(2)]);
      const waiting = async () => Number((await ds.query(`SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`))[0].n);
      await waitFor(async () => (await waiting()) >= 2, { what: 'both appends to wait for the held row' });
      await holder.commitTransaction();
      const results = await both;
      expect(results.map((r) => (r.status === 'rejected' ? String((r.reason as Error).message) : r.status))).toEqual(['fulfilled', 'fulfilled']);
    } finally {
      if (holder.isTransactionActive) await holder.rollbackTransaction();
      await holder.release();
    }
    for (const run of [id, other]) {
      expect(await stored(run)).toEqual([1, 2]);
      expect(await runs.findById(run)).toMatchObject({ lastSeq: 2 });
    }
  });

  it('a run whose rows cannot be stored (a seq written twice) fails alone; the runs written with it are kept', async () => {
    const good = await open();
    const bad = await open();
    await writer.append(bad, 'me', rows(1, 1));
    const results = await Promise.allSettled([writer.append(good, 'me', rows(1, 2)), writer.append(bad, 'me', rows(1, 1))]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected']);
    expect(await stored(good)).toEqual([1, 2]);
    expect(await stored(bad)).toEqual([1]);
  });
});
