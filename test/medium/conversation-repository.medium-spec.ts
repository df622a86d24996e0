import { randomUUID } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { ChatMessageEntity } from '../../src/chat/entities/chat-message.entity';
import { ConversationEntity } from '../../src/chat/entities/conversation.entity';
import { ConversationRepository } from '../../src/chat/repositories/conversation.repository';
import { RunEntity } from '../../src/runs/entities/run.entity';
import { RunRepository } from '../../src/runs/repositories/run.repository';
import { startDatabaseContext, type DatabaseContext } from '../support/db-context';

/** A turn's first write against the real database (PGlite here, PostgreSQL on test:db). */
describe('ConversationRepository (medium)', () => {
  let db: DatabaseContext;
  let ds: DataSource;
  let repo: ConversationRepository;
  let runs: RunRepository;

  beforeAll(async () => {
    db = await startDatabaseContext([ConversationEntity, ChatMessageEntity, RunEntity], [ConversationRepository, RunRepository]);
    ds = db.ds;
    repo = db.ctx.get(ConversationRepository);
    runs = db.ctx.get(RunRepository);
  });
  afterAll(async () => {
    await db?.close();
  });

  const newRun = (requestId: string, conversationId: string, userMessageId: string) => ({
    requestId,
    conversationId,
    projectId: 'p',
    userMessageId,
    protocol: 'unified',
    options: { mode: 'act' as const },
    leaseOwner: 'instance-a',
    leaseMs: 30_000,
  });

  /** Counts what the data source sends: TypeORM hands every statement to its logger. */
  async function counted<T>(fn: () => Promise<T>): Promise<{ result: T; statements: string[] }> {
    const statements: string[] = [];
    const logger = ds.logger;
    const seen = (q: string) => statements.push(q.trim().split(/\s+/).slice(0, 3).join(' '));
    Object.assign(ds, { logger: { ...logger, logQuery: seen, logQueryError: () => undefined, logQuerySlow: () => undefined, logSchemaBuild: () => undefined, logMigration: () => undefined, log: () => undefined } });
    try {
      return { result: await fn(), statements };
    } finally {
      Object.assign(ds, { logger });
    }
  }

  it("stores a new turn's conversation, user message and run with one statement and no transaction", async () => {
    const requestId = randomUUID();
    const opening = repo.opening({ conversation: { projectId: 'p', title: 'a title' }, content: 'hello', requestId });
    const { statements } = await counted(() => runs.create(newRun(requestId, opening.conversationId, opening.userMessageId), opening.prelude));
    expect(statements).toHaveLength(1);
    expect(statements.filter((s) => /TRANSACTION|COMMIT/i.test(s))).toEqual([]);

    const [conv] = await ds.query('SELECT project_id, title, settings FROM conversations WHERE id = $1', [opening.conversationId]);
    expect(conv).toEqual({ project_id: 'p', title: 'a title', settings: {} });
    const [msg] = await ds.query('SELECT conversation_id, role, request_id, content, status, metadata FROM chat_messages WHERE id = $1', [opening.userMessageId]);
    expect(msg).toEqual({ conversation_id: opening.conversationId, role: 'user', request_id: requestId, content: 'hello', status: 'complete', metadata: {} });
    const [run] = await ds.query('SELECT conversation_id, user_message_id, status, lease_owner FROM runs WHERE request_id = $1', [requestId]);
    expect(run).toEqual({ conversation_id: opening.conversationId, user_message_id: opening.userMessageId, status: 'running', lease_owner: 'instance-a' });
  });

  it("a turn in an existing conversation adds its message and run to it, and the conversation's title stays", async () => {
    const first = randomUUID();
    const opening = repo.opening({ conversation: { projectId: 'p', title: 'first question' }, content: 'first question', requestId: first });
    await runs.create(newRun(first, opening.conversationId, opening.userMessageId), opening.prelude);
    const second = randomUUID();
    const next = repo.opening({ conversation: { id: opening.conversationId }, content: 'follow-up', requestId: second });
    expect(next.conversationId).toBe(opening.conversationId);
    await runs.create(newRun(second, opening.conversationId, next.userMessageId), next.prelude);
    const messages = await ds.query(`SELECT content FROM chat_messages WHERE conversation_id = $1 ORDER BY created_at, content`, [opening.conversationId]);
    expect(messages.map((m: { content: string }) => m.content)).toEqual(['first question', 'follow-up']);
    expect((await ds.query('SELECT count(*)::int AS n FROM conversations WHERE title = $1', ['first question']))[0].n).toBe(1);
  });

  it('stores nothing of a turn whose run cannot be stored', async () => {
    const taken = randomUUID();
    const before = repo.opening({ conversation: { projectId: 'p', title: 'taken' }, content: 'x', requestId: taken });
    await runs.create(newRun(taken, before.conversationId, before.userMessageId), before.prelude);
    // the same requestId again: the run's primary key refuses it, so the statement fails whole
    const opening = repo.opening({ conversation: { projectId: 'p', title: 'lost turn' }, content: 'lost', requestId: taken });
    await expect(runs.create(newRun(taken, opening.conversationId, opening.userMessageId), opening.prelude)).rejects.toThrow();
    expect(await ds.query('SELECT id FROM conversations WHERE id = $1', [opening.conversationId])).toEqual([]);
    expect(await ds.query('SELECT id FROM chat_messages WHERE id = $1', [opening.userMessageId])).toEqual([]);
  });
});
