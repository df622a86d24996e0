import { randomUUID } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { RunEventEntity } from '../../src/runs/entities/run-event.entity';
import { RunEntity } from '../../src/runs/entities/run.entity';
import { RunEventRepository } from '../../src/runs/repositories/run-event.repository';
import { RunRepository } from '../../src/runs/repositories/run.repository';
import { RunTakeoverRepository } from '../../src/runs/repositories/run-takeover.repository';
import { WebhookOutboxRepository } from '../../src/webhooks/repositories/webhook-outbox.repository';
import { WEBHOOK_ANSWER_LIMIT } from '../../src/webhooks/webhook-event';
import { startDatabaseContext, type DatabaseContext } from '../support/db-context';

/** The outbox's SQL against the real database: written with the close or not at all, claimed once, released, recorded. */
describe('webhook outbox (medium)', () => {
  let db: DatabaseContext;
  let ds: DataSource;
  let outbox: WebhookOutboxRepository;
  let events: RunEventRepository;
  let runs: RunRepository;
  let takeovers: RunTakeoverRepository;
  let conversationId: string;

  beforeAll(async () => {
    db = await startDatabaseContext([RunEntity, RunEventEntity], [RunRepository, RunTakeoverRepository, RunEventRepository, WebhookOutboxRepository]);
    ds = db.ds;
    outbox = db.ctx.get(WebhookOutboxRepository);
    events = db.ctx.get(RunEventRepository);
    runs = db.ctx.get(RunRepository);
    takeovers = db.ctx.get(RunTakeoverRepository);
    [{ id: conversationId }] = await ds.query(`INSERT INTO conversations (project_id, title) VALUES ('p', 't') RETURNING id`);
    await ds.query(`INSERT INTO webhook_settings (project_id, secret) VALUES ('p', 'whsec_dGVzdHRlc3R0ZXN0dGVzdHRlc3R0ZXN0dGVzdHRlc3Q=')`);
  });
  afterAll(async () => {
    await db?.close();
  });
  beforeEach(() => ds.query('DELETE FROM webhook_deliveries'));

  const open = async (webhookUrl: string | null = 'https://hooks.example.com/x', owner = 'me') => {
    const requestId = randomUUID();
    await ds.query(`INSERT INTO runs (request_id, conversation_id, project_id, protocol, status, options, lease_owner, lease_expires_at) VALUES ($1, $2, 'p', 'unified', 'running', $3, $4, now() + interval '1 minute')`, [
      requestId,
      conversationId,
      JSON.stringify(webhookUrl ? { webhookUrl } : {}),
      owner,
    ]);
    return requestId;
  };
  const rows = () => ds.query(`SELECT request_id, type, status, answer, answer_truncated, state, next_attempt_at <= now() AS due FROM webhook_deliveries ORDER BY created_at`) as Promise<Array<Record<string, unknown>>>;
  const done = (requestId: string) => [{ seq: 1, type: 'done', data: { requestId, seq: 1, type: 'done' } }];

  it('the closing write stores the outbox row with the run end, and a fenced close stores neither', async () => {
    const id = await open();
    const long = 'é'.repeat(WEBHOOK_ANSWER_LIMIT + 5);
    await events.appendFenced(id, 'me', done(id), { status: 'completed', stopReason: 'final_answer', announce: { answer: long, usage: { totalTokens: 3 } } });
    expect(await rows()).toEqual([{ request_id: id, type: 'run.completed', status: 'completed', answer: 'é'.repeat(WEBHOOK_ANSWER_LIMIT), answer_truncated: true, state: 'pending', due: true }]);
    // another instance's close (it lost the lease): no end, no event
    const other = await open();
    await expect(events.appendFenced(other, 'not-me', done(other), { status: 'failed', stopReason: 'error', announce: { answer: '', usage: null } })).rejects.toThrow('lost its lease');
    expect((await rows()).map((r) => r.request_id)).toEqual([id]);
  });

  it('a pause announces nothing; a run without any URL announces nothing', async () => {
    const paused = await open();
    await events.appendFenced(paused, 'me', [{ seq: 1, type: 'paused', data: {} }], { status: 'paused', stopReason: null, announce: { answer: 'x', usage: null } });
    await ds.query(`UPDATE webhook_settings SET url = NULL`);
    const silent = await open(null);
    await events.appendFenced(silent, 'me', done(silent), { status: 'completed', stopReason: 'final_answer', announce: { answer: 'x', usage: null } });
    expect(await rows()).toEqual([]);
  });

  it("the sweeper's claim writes a held event that release() fills in and makes due", async () => {
    const id = await open('https://hooks.example.com/x', 'dead');
    await ds.query(`UPDATE runs SET lease_expires_at = now() - interval '1 minute' WHERE request_id = $1`, [id]);
    expect((await takeovers.claimExpired()).map((r) => r.requestId)).toEqual([id]);
    expect(await rows()).toEqual([expect.objectContaining({ type: 'run.failed', status: 'failed', answer: null, due: false })]);
    await outbox.release(id, 'rebuilt');
    expect(await rows()).toEqual([expect.objectContaining({ answer: 'rebuilt', due: true })]);
  });

  it('announce() (the API for a run that starts waiting for a person) writes an event in the caller\'s transaction, or none when rolled back', async () => {
    const id = await open();
    await expect(
      ds.transaction(async (m) => {
        expect(await outbox.announce(id, { type: 'run.awaiting_approval', status: 'awaiting_approval', stopReason: null, answer: null }, m)).toBe(true);
        throw new Error('rolled back');
      }),
    ).rejects.toThrow('rolled back');
    expect(await rows()).toEqual([]);
    expect(await outbox.announce(id, { type: 'run.awaiting_approval', status: 'awaiting_approval', stopReason: null, answer: null })).toBe(true);
    expect(await rows()).toEqual([expect.objectContaining({ type: 'run.awaiting_approval', answer: null, due: true })]);
  });

  it('concurrent claims never take the same row; a stale outcome is ignored', async () => {
    for (let i = 0; i < 6; i++) await outbox.announce(await open(), { type: 'run.completed', status: 'completed', stopReason: 'final_answer', answer: `a${i}` });
    const claims = await Promise.all([1, 2, 3, 4].map((n) => outbox.claimDue(`i${n}`, 2, 60_000)));
    const ids = claims.flat().map((c) => c.id);
    expect(ids).toHaveLength(6);
    expect(new Set(ids).size).toBe(6);
    expect(claims.flat().every((c) => c.attempt === 1 && c.secrets?.current.startsWith('whsec_') && c.secrets.previous === null)).toBe(true);
    // nothing is due while claimed
    expect(await outbox.claimDue('late', 10, 60_000)).toEqual([]);
    const [first] = claims.flat();
    await outbox.finishTry(first.id, 2, { statusCode: 200, error: null, state: 'delivered', retryInMs: 0 });
    expect((await ds.query(`SELECT state FROM webhook_deliveries WHERE id = $1`, [first.id]))[0].state).toBe('pending');
    await outbox.finishTry(first.id, 1, { statusCode: 200, error: null, state: 'delivered', retryInMs: 0 });
    expect((await ds.query(`SELECT state FROM webhook_deliveries WHERE id = $1`, [first.id]))[0].state).toBe('delivered');
  });
});
