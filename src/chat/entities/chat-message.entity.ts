import type { AnswerMetadata } from '../../runs/answer-store.port';
import { Column, CreateDateColumn, Entity, Index, PrimaryGeneratedColumn } from 'typeorm';

export type ChatRole = 'user' | 'assistant';
export type ChatMessageStatus = 'complete' | 'cancelled' | 'error';

/**
 * A stored chat message. The assistant message of a turn is unique per requestId
 * (partial unique index in the migration), so it is stored exactly once.
 */
@Entity({ name: 'chat_messages' })
@Index('idx_chat_messages_conversation', ['conversationId', 'createdAt'])
export class ChatMessageEntity {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Column({ name: 'conversation_id', type: 'uuid' })
  conversationId: string;

  @Column({ type: 'varchar', length: 16 })
  role: ChatRole;

  @Column({ type: 'text' })
  content: string;

  @Column({ type: 'varchar', length: 16, default: 'complete' })
  status: ChatMessageStatus;

  @Column({ name: 'request_id', type: 'uuid', nullable: true })
  requestId: string | null;

  @Column({ type: 'jsonb', default: () => "'{}'::jsonb" })
  /** an assistant message's AnswerMetadata; `{}` for user messages */
  metadata: AnswerMetadata | Record<string, never>;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}
