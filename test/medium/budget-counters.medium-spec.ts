import { randomUUID } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { BudgetRepository } from '../../src/chat/repositories/budget.repository';
import { RunEntity } from '../../src/runs/entities/run.entity';
import { RunRepository } from '../../src/runs/repositories/run.repository';
import { RunTakeoverRepository } from '../../src/runs/repositories/run-takeover.repository';
import { startDatabaseContext, type DatabaseContext } from '../support/db-context';

/**
 * Issue 46, deliver 5: a budget's running counters (migration 1764720000000) against the real
 * database (PGlite here, PostgreSQL with DATABASE_URL). The admission reads the budget row; every
 * way a run ends settles it in the closing statement; what the period spent is what the report
 * of its runs sums, whichever path wrote it.
 */
describe('budget counters (medium)', () => {
  let db: DatabaseContext;
  let ds: DataSource;
  let budgets: BudgetRepository;
  let runs: RunRepository;
  let takeovers: RunTakeoverRepository;
  let conversationId: string;

  beforeAll(async () => {
    db = await startDatabaseContext([RunEntity], [RunRepository, RunTakeoverRepository, BudgetRepository]);
    ds = db.ds;
    budgets = db.ctx.get(BudgetRepository);
    runs = db.ctx.get(RunRepository);
    takeovers = db.ctx.get(RunTakeoverRepository);
    [{ id: conversationId }] = await ds.query(`INSERT INTO conversations (project_id, title) VALUES ('p', 't') RETURNING id`);
  });
  afterAll(async () => {
    await db?.close();
  });

  const setBudget = (projectId: string, tokens: number, period: 'day' | 'month' = 'month') => budgets.put({ scope: 'project', scopeId: projectId, period, tokens, cost: null, warnAt: null });
  const admit = (projectId: string, tokens = 1000, keyId: string | null = null) => budgets.admit(projectId, keyId, { requestId: randomUUID(), tokens, cost: 0 }, new Date());
  /** an admitted send whose run is stored and running */
  const admitAndRun = async (projectId: string, tokens = 1000, keyId: string | null = null) => {
    const requestId = randomUUID();
    const a = await budgets.admit(projectId, keyId, { requestId, tokens, cost: 0 }, new Date());
    expect(a.inserted).toBe(true);
    await runs.create({ requestId, conversationId, projectId, userMessageId: null, protocol: 'two-stage', options: { mode: 'act' }, leaseOwner: 'me', leaseMs: 30_000, keyId });
    return requestId;
  };
  /** a run stored without an admission (no budget applied when it was sent) */
  const unbudgetedRun = async (projectId: string) => {
    const requestId = randomUUID();
    await runs.create({ requestId, conversationId, projectId, userMessageId: null, protocol: 'two-stage', options: { mode: 'act' }, leaseOwner: 'me', leaseMs: 30_000 });
    return requestId;
  };
  /** the run ends with this stored usage, as the run's closing statement stores it */
  const end = (requestId: string, usage: Record<string, unknown> | null, status = 'completed') =>
    ds.query(`UPDATE runs SET status = $2, usage = $3::jsonb WHERE request_id = $1`, [requestId, status, usage === null ? null : JSON.stringify(usage)]);
  const spent = async (projectId: string, scope: 'project' | 'key' = 'project') => (await budgets.find(scope, projectId))!.spent.tokens;

  it('admits against the counters: reservations hold until the run ends, then its stored usage counts instead', async () => {
    await setBudget('a', 3000);
    const first = await admitAndRun('a');
    await admitAndRun('a');
    await admitAndRun('a');
    expect(await spent('a')).toBe(3000);
    const refused = await admit('a');
    expect(refused.inserted).toBe(false);
    expect(refused.budgets[0].spent.tokens).toBe(3000);
    await end(first, { totalTokens: 400, llmCalls: 1 });
    // 400 spent + two reservations of 1000: room for one more reservation, and the first's is gone
    expect(await spent('a')).toBe(2400);
    expect(await ds.query(`SELECT 1 FROM budget_reservations WHERE request_id = $1`, [first])).toHaveLength(0);
    expect((await admit('a', 601)).inserted).toBe(false);
    expect((await admit('a', 600)).inserted).toBe(true);
  });

  it('a run that ended without stored usage (its instance died, a paused run cancelled) counts its whole reservation', async () => {
    await setBudget('b', 10_000);
    const lost = await admitAndRun('b', 1500);
    await end(lost, null, 'failed');
    expect(await spent('b')).toBe(1500);
    // the sweeper's own statement, for a run whose lease expired
    const swept = await admitAndRun('b', 700);
    await ds.query(`UPDATE runs SET lease_expires_at = now() - interval '1 minute' WHERE request_id = $1`, [swept]);
    expect((await takeovers.claimExpired(20)).map((r) => r.requestId)).toContain(swept);
    expect(await spent('b')).toBe(2200);
  });

  it('a send refused after its admission releases its reservation; one whose run was never stored lapses', async () => {
    await setBudget('c', 10_000);
    const refusedLater = randomUUID();
    expect((await budgets.admit('c', null, { requestId: refusedLater, tokens: 1000, cost: 0 }, new Date())).inserted).toBe(true);
    const orphan = randomUUID();
    expect((await budgets.admit('c', null, { requestId: orphan, tokens: 2000, cost: 0 }, new Date())).inserted).toBe(true);
    expect(await spent('c')).toBe(3000);
    await budgets.release(refusedLater);
    expect(await spent('c')).toBe(2000);
    // young: still held
    expect(await budgets.lapseOrphans()).toBe(0);
    expect(await spent('c')).toBe(2000);
    // past the age (here 0 ms: the same statement as at ORPHAN_RESERVATION_MS, without waiting for it)
    // (the earlier tests' admissions without a run lapse with it)
    expect(await budgets.lapseOrphans(100, 0)).toBeGreaterThanOrEqual(1);
    expect(await ds.query(`SELECT 1 FROM budget_reservations WHERE request_id = $1`, [orphan])).toHaveLength(0);
    expect(await spent('c')).toBe(0);
    // a reservation whose run is stored is its run's to settle, however old
    const live = await admitAndRun('c', 500);
    expect(await budgets.lapseOrphans(100, 0)).toBe(0);
    await end(live, { totalTokens: 100, llmCalls: 1 });
    expect(await spent('c')).toBe(100);
  });

  it('a budget set now starts from the ended runs of its period; changing its limit keeps what it counted, changing its period recounts', async () => {
    const ran = await unbudgetedRun('d');
    await end(ran, { totalTokens: 250, llmCalls: 1 });
    // a run ended before the project had a budget: the new budget counts it
    expect((await setBudget('d', 5000)).spent.tokens).toBe(250);
    // a run without a reservation (sent while this instance still knew of no budget) counts when it ends
    await end(await unbudgetedRun('d'), { totalTokens: 50, llmCalls: 1 });
    expect(await spent('d')).toBe(300);
    expect((await setBudget('d', 9000)).spent.tokens).toBe(300);
    // kept, not recounted: a charge only the counters know (a run without usage) survives a limit change
    await ds.query(`UPDATE budgets SET spent_tokens = spent_tokens + 7 WHERE scope = 'project' AND scope_id = 'd'`);
    expect((await setBudget('d', 8000)).spent.tokens).toBe(307);
    expect((await setBudget('d', 8000, 'day')).spent.tokens).toBe(300);
  });

  it('a new period counts from zero; a run started in the last period and ending in this one counts in neither', async () => {
    await setBudget('e', 2000);
    const old = await admitAndRun('e', 1000);
    // the row as the last month left it: nearly spent, with this run's reservation held
    await ds.query(`UPDATE budgets SET period_start = date_trunc('month', now() AT TIME ZONE 'UTC' - interval '1 month') AT TIME ZONE 'UTC', spent_tokens = 1000 WHERE scope_id = 'e'`);
    await ds.query(`UPDATE runs SET created_at = now() - interval '40 days' WHERE request_id = $1`, [old]);
    await ds.query(`UPDATE budget_reservations SET created_at = now() - interval '40 days' WHERE request_id = $1`, [old]);
    expect(await spent('e')).toBe(0);
    await end(old, { totalTokens: 900, llmCalls: 1 });
    expect(await spent('e')).toBe(0);
    expect((await admit('e', 2000)).inserted).toBe(true);
    expect((await admit('e', 1)).inserted).toBe(false);
  });

  it('twenty admissions at once against room for five: five are inserted (on PostgreSQL each on its own connection)', async () => {
    await setBudget('f', 5000);
    const all = await Promise.all(Array.from({ length: 20 }, () => admit('f')));
    expect(all.filter((a) => a.inserted)).toHaveLength(5);
    expect(await spent('f')).toBe(5000);
    const [{ n }] = await ds.query(`SELECT count(*)::int AS n FROM budget_reservations WHERE project_id = 'f'`);
    expect(n).toBe(5);
  });
});
