import { randomUUID } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { ChatMessageEntity } from '../../src/chat/entities/chat-message.entity';
import { ConversationEntity } from '../../src/chat/entities/conversation.entity';
import { ConversationRepository } from '../../src/chat/repositories/conversation.repository';
import { startDatabaseContext, type DatabaseContext } from '../support/db-context';

/** A turn's first writes against the real database (PGlite here, PostgreSQL on test:db). */
describe('ConversationRepository (medium)', () => {
  let db: DatabaseContext;
  let ds: DataSource;
  let repo: ConversationRepository;

  beforeAll(async () => {
    db = await startDatabaseContext([ConversationEntity, ChatMessageEntity], [ConversationRepository]);
    ds = db.ds;
    repo = db.ctx.get(ConversationRepository);
  });
  afterAll(async () => {
    await db?.close();
  });

  it('creates a conversation and a user message each with one statement and no transaction, returning what the database generated', async () => {
    const statements: string[] = [];
    // count what the repository sends: TypeORM hands every statement to the data source's logger
    const logger = ds.logger;
    const seen = (q: string) => statements.push(q.trim().split(/\s+/).slice(0, 3).join(' '));
    Object.assign(ds, { logger: { ...logger, logQuery: seen, logQueryError: () => undefined, logQuerySlow: () => undefined, logSchemaBuild: () => undefined, logMigration: () => undefined, log: () => undefined } });
    try {
      const c = await repo.create('p', 'a title');
      const requestId = randomUUID();
      const m = await repo.insertUserMessage(c.id, 'hello', requestId);
      expect(statements.filter((s) => /TRANSACTION|COMMIT/i.test(s))).toEqual([]);
      expect(statements).toHaveLength(2);
      // the returned rows carry the generated id and timestamps, as stored
      const [row] = await ds.query('SELECT id, created_at FROM conversations WHERE id = $1', [c.id]);
      expect(new Date(row.created_at).getTime()).toBe(c.createdAt.getTime());
      expect(c.updatedAt).toBeInstanceOf(Date);
      const [msg] = await ds.query('SELECT id, conversation_id, request_id, content, created_at FROM chat_messages WHERE id = $1', [m.id]);
      expect(msg).toMatchObject({ conversation_id: c.id, request_id: requestId, content: 'hello' });
      expect(new Date(msg.created_at).getTime()).toBe(m.createdAt.getTime());
    } finally {
      Object.assign(ds, { logger });
    }
  });
});
