import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { randomUUID } from 'node:crypto';
import type { EntityManager, Repository } from 'typeorm';
import { ChatMessageEntity, type ChatMessageStatus } from '../entities/chat-message.entity';
import { ConversationEntity, type ConversationSettings } from '../entities/conversation.entity';
import type { AnswerMetadata } from '../../runs/answer-store.port';
import { storageSafe, stripNul } from '../../common/util/text-safety.util';
import { preparedQuery } from '../../database/prepared-query';
import type { StatementPrelude } from '../../database/statement-prelude';

/** Conversations and their messages. */
@Injectable()
export class ConversationRepository {
  constructor(
    @InjectRepository(ConversationEntity) private readonly conversations: Repository<ConversationEntity>,
    @InjectRepository(ChatMessageEntity) private readonly messages: Repository<ChatMessageEntity>,
  ) {}

  /**
   * The writes that open a turn, for the statement that stores its run (RunsService.open): the
   * conversation when the turn starts one, and the user message. Ids are made here, so nothing
   * needs reading back; the rows' timestamps are the database's.
   */
  opening(p: { conversation: { id: string } | { projectId: string; title: string; newId?: string }; content: string; requestId: string }): {
    conversationId: string;
    userMessageId: string;
    prelude: StatementPrelude;
  } {
    const params: unknown[] = [];
    const $ = (v: unknown) => `$${params.push(v)}`;
    const ctes: string[] = [];
    const conversationId = 'id' in p.conversation ? p.conversation.id : (p.conversation.newId ?? randomUUID());
    if (!('id' in p.conversation)) {
      ctes.push(`opened_conversation AS (INSERT INTO conversations (id, project_id, title) VALUES (${$(conversationId)}::uuid, ${$(p.conversation.projectId)}, ${$(p.conversation.title.slice(0, 120))}))`);
    }
    const userMessageId = randomUUID();
    ctes.push(
      `opened_message AS (INSERT INTO chat_messages (id, conversation_id, role, content, status, request_id) VALUES (${$(userMessageId)}::uuid, ${$(conversationId)}::uuid, 'user', ${$(p.content)}, 'complete', ${$(p.requestId)}::uuid))`,
    );
    return { conversationId, userMessageId, prelude: { ctes, params } };
  }

  findById(id: string): Promise<ConversationEntity | null> {
    return this.conversations.findOne({ where: { id } });
  }

  listByProject(projectId: string, limit = 200): Promise<ConversationEntity[]> {
    return this.conversations.find({ where: { projectId }, order: { updatedAt: 'DESC' }, take: limit });
  }

  async updateSettings(id: string, patch: ConversationSettings): Promise<ConversationEntity | null> {
    const c = await this.findById(id);
    if (!c) return null;
    c.settings = { ...(c.settings ?? {}), ...patch };
    return this.conversations.save(c);
  }

  /** Renames without touching updated_at: the list stays ordered by the last turn. */
  async rename(id: string, title: string): Promise<ConversationEntity | null> {
    await this.conversations.query(`UPDATE conversations SET title = $2 WHERE id = $1`, [id, stripNul(title)]);
    return this.findById(id);
  }

  /** Locks the row for a deletion in `m`'s transaction (a turn starting meanwhile waits); false when it is gone. */
  async lockForDelete(m: EntityManager, id: string): Promise<boolean> {
    const rows: unknown[] = await m.query(`SELECT id FROM conversations WHERE id = $1 FOR UPDATE`, [id]);
    return rows.length > 0;
  }

  /** Deletes the conversation and its messages in `m`'s transaction; returns how many messages. */
  async deleteWithMessages(m: EntityManager, id: string): Promise<number> {
    const res: unknown = await m.query(`DELETE FROM chat_messages WHERE conversation_id = $1 RETURNING id`, [id]);
    await m.query(`DELETE FROM conversations WHERE id = $1`, [id]);
    return Array.isArray(res) && res.length === 2 && typeof res[1] === 'number' ? res[1] : Array.isArray(res) ? res.length : 0;
  }

  /**
   * Stores the assistant message of a turn exactly once: a second call for the same requestId
   * (a retry, a racing instance) returns the stored row instead of adding one.
   */
  async insertAssistantOnce(
    conversationId: string,
    requestId: string,
    content: string,
    status: ChatMessageStatus,
    metadata: AnswerMetadata,
  ): Promise<{ message: { id: string }; created: boolean }> {
    // the conversation's updated_at moves with its answer, in the same statement (the list is
    // ordered by the last turn); the stored row is read back only when it was there already
    const inserted = (
      await preparedQuery(
        this.messages.manager.connection,
        `WITH touched AS (UPDATE conversations SET updated_at = now() WHERE id = $1)
         INSERT INTO chat_messages (conversation_id, role, content, status, request_id, metadata)
         VALUES ($1, 'assistant', $2, $3, $4, $5::jsonb)
         ON CONFLICT (request_id) WHERE role = 'assistant' DO NOTHING
         RETURNING id`,
        [conversationId, stripNul(content), status, requestId, JSON.stringify(storageSafe(metadata))],
      )
    ).rows as Array<{ id: string }>;
    if (inserted.length > 0) return { message: { id: String(inserted[0].id) }, created: true };
    const message = await this.messages.findOneOrFail({ where: { requestId, role: 'assistant' }, select: { id: true } });
    return { message: { id: message.id }, created: false };
  }

  findAssistantMessage(requestId: string): Promise<ChatMessageEntity | null> {
    return this.messages.findOne({ where: { requestId, role: 'assistant' } });
  }

  /** Oldest first. */
  listMessages(conversationId: string, limit = 1000): Promise<ChatMessageEntity[]> {
    return this.messages.find({ where: { conversationId }, order: { createdAt: 'ASC' }, take: limit });
  }

  /** The newest `limit` messages, returned oldest first; read in `m`'s transaction when given. */
  async recentMessages(conversationId: string, limit: number, m?: EntityManager): Promise<ChatMessageEntity[]> {
    const repo = m ? m.getRepository(ChatMessageEntity) : this.messages;
    const rows = await repo.find({ where: { conversationId }, order: { createdAt: 'DESC' }, take: limit });
    return rows.reverse();
  }

  /** The project of a conversation; undefined when there is no such conversation. */
  async projectOf(id: string): Promise<string | undefined> {
    const rows = (await this.conversations.query('SELECT project_id FROM conversations WHERE id = $1', [id])) as Array<{ project_id: string }>;
    return rows[0]?.project_id ?? undefined;
  }
}
