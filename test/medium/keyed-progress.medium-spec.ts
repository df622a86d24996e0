import { randomUUID } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { IdempotencyKeyStore } from '../../src/database/idempotency-key.store';
import { KeyedProgressStore } from '../../src/database/keyed-progress.store';
import { startDatabaseContext, type DatabaseContext } from '../support/db-context';

/** The statements of a keyed tool-only execution's progress against the real database: owned writes, the heartbeat, one takeover. */
describe('keyed execution progress (medium)', () => {
  let db: DatabaseContext;
  let ds: DataSource;
  let keys: IdempotencyKeyStore;
  let progress: KeyedProgressStore;
  const WINDOW = 60_000;
  const LEASE = 5_000;

  beforeAll(async () => {
    db = await startDatabaseContext([], [IdempotencyKeyStore, KeyedProgressStore]);
    ds = db.ds;
    keys = db.ctx.get(IdempotencyKeyStore);
    progress = db.ctx.get(KeyedProgressStore);
  });
  afterAll(async () => {
    await db?.close();
  });

  /** a key claimed by `owner`, its heartbeat `idleMs` ago */
  const claimed = async (owner: string, idleMs = 0) => {
    const key = randomUUID();
    const requestId = randomUUID();
    expect(await keys.claim({ projectId: 'p', key, fingerprint: 'f'.repeat(64), requestId, windowMs: WINDOW, owner })).toBeNull();
    if (idleMs) await ds.query(`UPDATE idempotency_keys SET heartbeat_at = now() - ($2 || ' milliseconds')::interval WHERE key = $1`, [key, String(idleMs)]);
    return { key, requestId };
  };
  const step = { plan: { calls: [{ toolName: 't', args: {} }] }, executions: [{ outcome: 'success' }], running: 1 };

  it('the owner stores its progress and renews its heartbeat; find reads how long it has been idle', async () => {
    const { key } = await claimed('a/1', 20_000);
    expect((await keys.find('p', key))!.idleMs).toBeGreaterThanOrEqual(20_000);
    expect(await progress.heartbeat('p', key, 'a/1')).toBe(true);
    expect((await keys.find('p', key))!.idleMs).toBeLessThan(20_000);
    expect(await progress.save('p', key, 'a/1', step)).toBe(true);
    const [row] = await ds.query('SELECT progress FROM idempotency_keys WHERE key = $1', [key]);
    expect(row.progress).toEqual(step);
  });

  it('another owner changes nothing: no heartbeat, no progress, no result, no release', async () => {
    const { key } = await claimed('a/1');
    expect(await progress.heartbeat('p', key, 'b/2')).toBe(false);
    expect(await progress.save('p', key, 'b/2', step)).toBe(false);
    expect(await progress.finish('p', key, 'b/2', { done: true })).toBe(false);
    await progress.release('p', key, 'b/2');
    const held = await keys.find('p', key);
    expect(held).toMatchObject({ result: null });
    const [row] = await ds.query('SELECT progress, owner FROM idempotency_keys WHERE key = $1', [key]);
    expect(row).toEqual({ progress: null, owner: 'a/1' });
  });

  it('an execution whose heartbeat is younger than the lease is not taken over', async () => {
    const { key, requestId } = await claimed('a/1', 1_000);
    expect(await progress.takeOver('p', key, requestId, 'b/2', LEASE, WINDOW)).toBeNull();
  });

  it('an abandoned execution is taken over by exactly one of retries at once, with its progress; the old owner is fenced off', async () => {
    const { key, requestId } = await claimed('a/1');
    await progress.save('p', key, 'a/1', step);
    await ds.query(`UPDATE idempotency_keys SET heartbeat_at = now() - interval '10 seconds' WHERE key = $1`, [key]);
    const tries = await Promise.all(['b/1', 'b/2', 'b/3', 'b/4'].map((o) => progress.takeOver('p', key, requestId, o, LEASE, WINDOW)));
    const won = tries.filter((t) => t !== null);
    expect(won).toEqual([{ requestId, progress: step }]);
    const winner = ['b/1', 'b/2', 'b/3', 'b/4'][tries.findIndex((t) => t !== null)];
    expect(await progress.save('p', key, 'a/1', { ...step, running: null })).toBe(false);
    expect(await progress.finish('p', key, winner, { done: true })).toBe(true);
    expect((await keys.find('p', key))!.result).toEqual({ done: true });
    // a finished execution is never taken over
    await ds.query(`UPDATE idempotency_keys SET heartbeat_at = now() - interval '10 seconds' WHERE key = $1`, [key]);
    expect(await progress.takeOver('p', key, requestId, 'c/1', LEASE, WINDOW)).toBeNull();
    const [row] = await ds.query('SELECT progress FROM idempotency_keys WHERE key = $1', [key]);
    expect(row.progress).toBeNull();
  });

  it('an execution that stored nothing is released by its owner, and the next send claims the key anew', async () => {
    const { key, requestId } = await claimed('a/1');
    await progress.release('p', key, 'a/1');
    expect(await keys.find('p', key)).toBeNull();
    expect(await keys.claim({ projectId: 'p', key, fingerprint: 'f'.repeat(64), requestId: randomUUID(), windowMs: WINDOW, owner: 'b/1' })).toBeNull();
    expect((await keys.find('p', key))!.requestId).not.toBe(requestId);
  });
});
