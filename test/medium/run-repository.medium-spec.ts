import { randomUUID } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { PackedChunks1764300000000 } from '../../src/database/migrations/1764300000000-packed-chunks';
import { RunEventEntity } from '../../src/runs/entities/run-event.entity';
import { RunEntity } from '../../src/runs/entities/run.entity';
import { LeaseLostError, RunEventRepository } from '../../src/runs/repositories/run-event.repository';
import { RunRepository } from '../../src/runs/repositories/run.repository';
import { RunTakeoverRepository } from '../../src/runs/repositories/run-takeover.repository';
import { startDatabaseContext, type DatabaseContext } from '../support/db-context';
import { waitFor } from '../support/wait-for';

/** Every raw query of the runs repositories against the real database (PGlite here, PostgreSQL on test:db). */
describe('RunRepository and RunTakeoverRepository raw SQL (medium)', () => {
  let db: DatabaseContext;
  let ds: DataSource;
  let runs: RunRepository;
  let takeovers: RunTakeoverRepository;
  let events: RunEventRepository;
  let conversationId: string;

  beforeAll(async () => {
    db = await startDatabaseContext([RunEntity, RunEventEntity], [RunRepository, RunTakeoverRepository, RunEventRepository]);
    ds = db.ds;
    runs = db.ctx.get(RunRepository);
    takeovers = db.ctx.get(RunTakeoverRepository);
    events = db.ctx.get(RunEventRepository);
    [{ id: conversationId }] = await ds.query(`INSERT INTO conversations (project_id, title) VALUES ('p', 't') RETURNING id`);
  });
  afterAll(async () => {
    await db?.close();
  });

  const open = async (over: { owner?: string; leaseMs?: number } = {}) => {
    const requestId = randomUUID();
    await runs.create({
      requestId,
      conversationId,
      projectId: 'p',
      userMessageId: null,
      protocol: 'two-stage',
      options: { mode: 'act', budgets: { maxPhaseCycles: 3, maxDuplicateAttempts: 3, maxIterations: 10 }, detach: true },
      leaseOwner: over.owner ?? 'me',
      leaseMs: over.leaseMs ?? 30_000,
    });
    return requestId;
  };
  const leaseOf = async (id: string) => (await runs.findById(id))!.leaseExpiresAt!.getTime();

  it('creates a running run leased to its owner, with typed options', async () => {
    const id = await open();
    const r = (await runs.findById(id))!;
    expect(r).toMatchObject({ status: 'running', leaseOwner: 'me', control: null, lastSeq: 0, checkpoint: null });
    expect(r.options.budgets?.maxIterations).toBe(10);
    expect(r.options.detach).toBe(true);
    expect(r.leaseExpiresAt!.getTime()).toBeGreaterThan(Date.now() + 20_000);
  });

  it('renews the lease for its owner only, and only while running', async () => {
    const id = await open({ leaseMs: 1000 });
    const before = await leaseOf(id);
    await runs.renewLease(id, 'someone-else', 60_000);
    expect(await leaseOf(id)).toBe(before);
    await runs.renewLease(id, 'me', 60_000);
    expect(await leaseOf(id)).toBeGreaterThan(before + 30_000);
    await runs.finish(id, 'completed', 'final_answer', 3);
    await runs.renewLease(id, 'me', 60_000);
    expect((await runs.findById(id))!.leaseExpiresAt).toBeNull();
  });

  it('a renewal hands back the stored control request, so a missed NOTIFY still reaches the run', async () => {
    const id = await open();
    expect(await runs.renewLease(id, 'me', 60_000)).toEqual({ control: null });
    await runs.requestControl(id, 'cancel');
    expect(await runs.renewLease(id, 'me', 60_000)).toEqual({ control: 'cancel' });
    expect(await runs.renewLease(id, 'someone-else', 60_000)).toBe(false);
  });

  it('finishes a run once; the first status and a growing lastSeq win', async () => {
    const id = await open();
    expect(await runs.finish(id, 'cancelled', 'cancelled', 7)).toBe(true);
    expect(await runs.finish(id, 'completed', 'final_answer', 9)).toBe(false);
    expect(await runs.findById(id)).toMatchObject({ status: 'cancelled', stopReason: 'cancelled', lastSeq: 7, leaseOwner: null });
    await runs.setLastSeq(id, 5);
    expect((await runs.findById(id))!.lastSeq).toBe(7);
  });

  it('merges checkpoints by phase, keeping earlier phases, with NUL made storable', async () => {
    const id = await open();
    await runs.saveCheckpoint(id, 1, 2, { phaseIndex: 2, note: 'a\u0000b' });
    await runs.saveCheckpoint(id, 1, 4, { phaseIndex: 4 });
    const cp = (await runs.findById(id))!.checkpoint!;
    expect(cp.schemaVersion).toBe(1);
    expect(Object.keys(cp.byPhase).sort()).toEqual(['2', '4']);
    expect(cp.byPhase['2']).toEqual({ phaseIndex: 2, note: 'a\uFFFDb' });
  });

  it('stores control flags on running runs only', async () => {
    const id = await open();
    expect(await runs.requestControl(id, 'pause')).toBe(true);
    expect((await runs.findById(id))!.control).toBe('pause');
    await runs.markPaused(id, 4);
    expect(await runs.findById(id)).toMatchObject({ status: 'paused', control: null, leaseOwner: null, lastSeq: 4 });
    expect(await runs.requestControl(id, 'cancel')).toBe(false);
  });

  it('claims a paused run for exactly one of many concurrent resumes', async () => {
    const id = await open();
    await runs.markPaused(id, 4);
    const wins = await Promise.all(Array.from({ length: 6 }, (_, i) => runs.claimForResume(id, `resumer-${i}`, 30_000)));
    expect(wins.filter(Boolean)).toHaveLength(1);
    const r = (await runs.findById(id))!;
    expect(r.status).toBe('running');
    expect(r.leaseOwner).toBe(`resumer-${wins.indexOf(true)}`);
    expect(await runs.claimForResume(id, 'late', 30_000)).toBe(false);
  });

  it('cancels a paused run once, and never a running one', async () => {
    const running = await open();
    expect(await runs.cancelPaused(running)).toBe(false);
    const paused = await open();
    await runs.markPaused(paused, 2);
    expect(await runs.cancelPaused(paused)).toBe(true);
    expect(await runs.cancelPaused(paused)).toBe(false);
    expect((await runs.findById(paused))!.status).toBe('cancelled');
  });

  it('sweeps expired leases: each expired run is claimed by exactly one sweeper, live ones never', async () => {
    const live = await open({ leaseMs: 60_000 });
    const expired = await Promise.all([open({ leaseMs: -1000 }), open({ leaseMs: -1000 }), open({ leaseMs: -1000 })]);
    const claims = await Promise.all([takeovers.claimExpired(), takeovers.claimExpired(), takeovers.claimExpired()]);
    const claimed = claims.flat().map((c) => c.requestId);
    for (const id of expired) expect(claimed.filter((c) => c === id)).toHaveLength(1);
    expect(claimed).not.toContain(live);
    expect(claims.flat().find((c) => c.requestId === expired[0])).toEqual({ requestId: expired[0], conversationId, projectId: 'p', reason: 'protocol_cannot_continue' });
    for (const id of expired) expect(await runs.findById(id)).toMatchObject({ status: 'failed', stopReason: 'error', leaseOwner: null });
    expect((await runs.findById(live))!.status).toBe('running');
    expect(await takeovers.claimExpired()).toEqual([]);
  });

  it('a run that waited for a person when its lease expired is taken over by exactly one sweeper, not closed; other protocols are closed', async () => {
    const waiting = await Promise.all([open({ leaseMs: -1000 }), open({ leaseMs: -1000 })]);
    const unified = await open({ leaseMs: -1000 });
    const held = await open({ leaseMs: 60_000 });
    await ds.query(`UPDATE runs SET status = 'awaiting_approval' WHERE request_id = ANY($1)`, [[...waiting, unified, held]]);
    await ds.query(`UPDATE runs SET protocol = 'unified' WHERE request_id = $1`, [unified]);
    // closing sweeps skip what a takeover claims; the takeovers race, and each run goes to one of them
    const closed = (await takeovers.claimExpired(20, ['two-stage'])).map((r) => r.requestId);
    expect(closed).toContain(unified);
    expect(closed).not.toEqual(expect.arrayContaining([waiting[0]]));
    const claims = await Promise.all(['b', 'c', 'd'].map((owner) => takeovers.claimForTakeover(owner, 30_000, ['two-stage'])));
    for (const id of waiting) expect(claims.flat().filter((c) => c.run.requestId === id)).toHaveLength(1);
    expect(claims.flat().map((c) => c.run.requestId)).not.toContain(held);
    // the instance whose lease lapsed is named (the trace's run_taken_over fromInstance)
    expect(claims.flat().map((c) => c.fromInstance)).toEqual(['me', 'me']);
    for (const id of waiting) {
      const run = (await runs.findById(id))!;
      // still waiting, now leased to its new instance, whose writes the lease fences
      expect(run.status).toBe('awaiting_approval');
      expect(['b', 'c', 'd']).toContain(run.leaseOwner);
      expect(await runs.renewLease(id, 'me', 30_000)).toBe(false);
    }
    expect(await takeovers.claimForTakeover('e', 30_000, ['two-stage'])).toEqual([]);
    expect(await takeovers.awaitsTakeover(held)).toBe(false);
    // one it could not continue is closed as failed, by its holder only
    const owner = (await runs.findById(waiting[0]))!.leaseOwner!;
    expect(await takeovers.failTakenOver(waiting[0], 'someone-else')).toBe(false);
    expect(await takeovers.failTakenOver(waiting[0], owner)).toBe(true);
    expect(await runs.findById(waiting[0])).toMatchObject({ status: 'failed', leaseOwner: null });
  });

  it('a running run whose lease expired is continued by exactly one sweeper when it has a checkpoint, up to maxTakeovers; else closed with why', async () => {
    const [withCheckpoint, without, exhausted] = await Promise.all([open({ leaseMs: -1000 }), open({ leaseMs: -1000 }), open({ leaseMs: -1000 })]);
    for (const id of [withCheckpoint, exhausted]) await runs.saveCheckpoint(id, 1, 2, { phaseIndex: 2 });
    await ds.query(`UPDATE runs SET takeovers = 2 WHERE request_id = $1`, [exhausted]);
    const claims = await Promise.all(['b', 'c'].map((owner) => takeovers.claimForTakeover(owner, 30_000, ['two-stage'], 20, 2)));
    expect(claims.flat().map((c) => c.run.requestId)).toEqual([withCheckpoint]);
    const taken = (await runs.findById(withCheckpoint))!;
    expect(taken).toMatchObject({ status: 'running', takeovers: 1 });
    // the instance that was only slow has lost its fence
    expect(await runs.renewLease(withCheckpoint, 'me', 30_000)).toBe(false);
    const closed = await takeovers.claimExpired(20, ['two-stage'], 2);
    expect(closed.filter((c) => [without, exhausted].some((id) => id === c.requestId)).map((c) => [c.requestId, c.reason]).sort()).toEqual(
      [
        [without, 'no_checkpoint'],
        [exhausted, 'takeovers_exhausted'],
      ].sort(),
    );
    expect(closed.map((c) => c.requestId)).not.toContain(withCheckpoint);
  });

  it('a run released on shutdown is taken over naming its instance, and the hand-over does not count against maxTakeovers', async () => {
    // at the limit already: a kill now would close it, a hand-over must not
    const id = await open();
    await runs.saveCheckpoint(id, 1, 2, { phaseIndex: 2 });
    await ds.query(`UPDATE runs SET takeovers = 2 WHERE request_id = $1`, [id]);
    expect(await runs.releaseLease(id, 'me', 'running')).toBe(true);
    // released: its writes are fenced at once
    expect(await runs.renewLease(id, 'me', 30_000)).toBe(false);
    expect(await takeovers.claimExpired(20, ['two-stage'], 2)).toEqual([]);
    const [claim, ...more] = await takeovers.claimForTakeover('b', 30_000, ['two-stage'], 20, 2);
    expect(more).toEqual([]);
    expect(claim).toMatchObject({ fromInstance: 'me', handedOver: true });
    expect(await runs.findById(id)).toMatchObject({ status: 'running', leaseOwner: 'b', takeovers: 2, releasedBy: null });
    // handed over again by b, then b's successor dies: the hand-overs left the count at the limit, so the death closes it
    expect(await runs.releaseLease(id, 'b', 'running')).toBe(true);
    expect((await takeovers.claimForTakeover('me', 30_000, ['two-stage'], 20, 2))[0]).toMatchObject({ fromInstance: 'b', handedOver: true });
    await ds.query(`UPDATE runs SET lease_expires_at = now() - interval '1 second' WHERE request_id = $1`, [id]);
    expect(await takeovers.claimForTakeover('c', 30_000, ['two-stage'], 20, 2)).toEqual([]);
    expect((await takeovers.claimExpired(20, ['two-stage'], 2)).map((r) => [r.requestId, r.reason])).toEqual([[id, 'takeovers_exhausted']]);
  });

  it('stores run events in one INSERT and lists them after a seq, in order', async () => {
    const id = await open();
    await events.insertMany(id, [3, 1, 2].map((seq) => ({ seq, type: 'chunk', data: { seq, content: `c${seq}` } })));
    expect((await events.listAfter(id, 0)).map((e) => e.seq)).toEqual([1, 2, 3]);
    expect(await events.listAfter(id, 1, 1)).toEqual([{ seq: 2, type: 'chunk', data: { seq: 2, content: 'c2' } }]);
    // a row's first seq is unique: writing the same events again fails loudly
    await expect(events.insertMany(id, [{ seq: 1, type: 'chunk', data: {} }])).rejects.toThrow();
    // events of a run that is not stored are refused, none written
    const missing = '00000000-0000-4000-8000-000000000001';
    await expect(events.insertMany(missing, [{ seq: 1, type: 'chunk', data: {} }])).rejects.toThrow(/not stored/);
    expect(await events.listAfter(missing, 0)).toEqual([]);
  });

  describe('chunks stored several to a row', () => {
    const event = (seq: number, type: string) => ({ seq, type, data: { seq, type, content: type === 'chunk' ? `tok${seq} "quoted" \u2603` : undefined, phaseIndex: 0, cycleIndex: 0 } });
    // start, 5 chunks, a phase, 3 chunks, a sources event, 1 chunk, done: as a turn writes them
    const turn = ['start', 'chunk', 'chunk', 'chunk', 'chunk', 'chunk', 'phase', 'chunk', 'chunk', 'chunk', 'sources', 'chunk', 'done'].map((t, i) => event(i + 1, t));
    const rowsOf = async (id: string) => Number((await ds.query('SELECT count(*)::int AS n FROM run_events WHERE request_id = $1', [id]))[0].n);

    it('a write of consecutive chunks is one row; a reconnect after any seq gets exactly the events after it', async () => {
      const id = await open({ owner: 'me' });
      await events.appendFenced(id, 'me', turn.slice(0, 9));
      await events.appendFencedMany([{ requestId: id, owner: 'me', rows: turn.slice(9, 12) }]);
      await events.appendFenced(id, 'me', turn.slice(12), { status: 'completed', stopReason: 'stop' });
      // start | 5 chunks | phase | 2 chunks ; 1 chunk | sources | 1 chunk ; done
      expect(await rowsOf(id)).toBe(8);
      for (let after = 0; after <= turn.length; after++) {
        expect(await events.listAfter(id, after)).toEqual(turn.filter((e) => e.seq > after).map((e) => ({ seq: e.seq, type: e.type, data: JSON.parse(JSON.stringify(e.data)) })));
      }
      expect(await events.listAfter(id, 2, 3)).toEqual(turn.slice(2, 5).map((e) => ({ seq: e.seq, type: e.type, data: JSON.parse(JSON.stringify(e.data)) })));
      expect(await events.maxSeq(id)).toBe(turn.length);
      // the view operators query gives one row per event too
      const listed = await ds.query('SELECT seq, type, data FROM run_event_list WHERE request_id = $1 ORDER BY seq', [id]);
      expect(listed).toEqual(turn.map((e) => ({ seq: e.seq, type: e.type, data: JSON.parse(JSON.stringify(e.data)) })));
      expect((await runs.findById(id))!.lastSeq).toBe(turn.length);
    });

    it('migrating down stores every event in a row of its own again (what the previous version reads)', async () => {
      const id = await open({ owner: 'me' });
      await events.appendFenced(id, 'me', turn);
      const before = await events.listAfter(id, 0);
      const qr = ds.createQueryRunner();
      try {
        await new PackedChunks1764300000000().down(qr);
        const rows = await qr.query('SELECT seq, type, data FROM run_events WHERE request_id = $1 ORDER BY seq', [id]);
        expect(rows).toEqual(before);
        await new PackedChunks1764300000000().up(qr);
      } finally {
        await qr.release();
      }
      expect(await events.listAfter(id, 0)).toEqual(before);
    });

    it('counts events, not rows, when a grouped write reports what it stored', async () => {
      const id = await open({ owner: 'me' });
      const stored = await events.appendFencedMany([{ requestId: id, owner: 'me', rows: turn.slice(0, 6) }]);
      expect(stored.get(id)).toBe(6);
      expect(await rowsOf(id)).toBe(2);
    });
  });

  describe('fencing (every write of a turn carries its lease)', () => {
    const ev = (seq: number, type = 'chunk') => ({ seq, type, data: { seq, content: `c${seq}` } });

    it('stores events only while the writer holds the lease; after a sweep nothing more is stored', async () => {
      const id = await open({ owner: 'frozen', leaseMs: 1 });
      await events.appendFenced(id, 'frozen', [ev(1), ev(2)]);
      await expect(events.appendFenced(id, 'someone-else', [ev(3)])).rejects.toBeInstanceOf(LeaseLostError);
      await waitFor(async () => (await ds.query(`SELECT 1 FROM runs WHERE request_id = $1 AND lease_expires_at < now()`, [id])).length > 0, { what: 'the 1 ms lease to expire' });
      expect((await takeovers.claimExpired()).map((r) => r.requestId)).toContain(id);
      // the frozen instance wakes up: its events, checkpoint, progress and renewal are all refused
      await expect(events.appendFenced(id, 'frozen', [ev(3)])).rejects.toBeInstanceOf(LeaseLostError);
      await expect(events.appendFenced(id, 'frozen', [ev(3, 'done')], { status: 'completed', stopReason: 'stop' })).rejects.toBeInstanceOf(LeaseLostError);
      expect(await runs.saveCheckpoint(id, 1, 0, { phaseIndex: 0 }, 'frozen')).toBe(false);
      expect(await runs.renewLease(id, 'frozen', 60_000)).toBe(false);
      expect((await events.listAfter(id, 0)).map((e) => e.seq)).toEqual([1, 2]);
      expect((await runs.findById(id))!.status).toBe('failed');
    });

    it('stores the terminal event and the run status in one statement', async () => {
      const id = await open({ owner: 'me' });
      await events.appendFenced(id, 'me', [ev(1), ev(2, 'done')], { status: 'completed', stopReason: 'stop' });
      const run = (await runs.findById(id))!;
      expect(run).toMatchObject({ status: 'completed', stopReason: 'stop', lastSeq: 2, leaseOwner: null });
      expect((await events.listAfter(id, 0)).map((e) => e.type)).toEqual(['chunk', 'done']);
      // a second close (a racing writer) is refused and stores nothing
      await expect(events.appendFenced(id, 'me', [ev(3, 'done')], { status: 'failed', stopReason: 'error' })).rejects.toBeInstanceOf(LeaseLostError);
      expect((await runs.findById(id))!.status).toBe('completed');
    });

    it('a paused close leaves the run resumable', async () => {
      const id = await open({ owner: 'me' });
      await events.appendFenced(id, 'me', [ev(1, 'paused')], { status: 'paused', stopReason: null });
      expect((await runs.findById(id))!.status).toBe('paused');
      expect(await runs.claimForResume(id, 'other', 30_000)).toBe(true);
    });
  });
});
