import { Column, CreateDateColumn, Entity, PrimaryGeneratedColumn, UpdateDateColumn } from 'typeorm';

/** Per-conversation settings (PATCH /api/chat/conversations/:id/settings). */
export interface ConversationSettings {
  orchestratorEnabled?: boolean;
  customInstructions?: string;
  /** one of LLM_MODELS */
  model?: string;
  /** which tool calls wait for a person: the tools' policy (default), or every call (issue 32) */
  approvals?: 'policy' | 'always';
}

@Entity({ name: 'conversations' })
export class ConversationEntity {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Column({ name: 'project_id', type: 'varchar', length: 64 })
  projectId: string;

  @Column({ type: 'text', default: '' })
  title: string;

  @Column({ type: 'jsonb', default: () => "'{}'::jsonb" })
  settings: ConversationSettings;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;
}
