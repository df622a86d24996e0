import { Column, CreateDateColumn, Entity, PrimaryGeneratedColumn } from 'typeorm';

/** One step of a turn, for operators: tool calls, phases, LLM requests, guards. */
@Entity({ name: 'trace_events' })
export class TraceEventEntity {
  @PrimaryGeneratedColumn({ type: 'bigint' })
  id: string;

  @Column({ name: 'request_id', type: 'varchar', length: 64, nullable: true })
  requestId: string | null;

  @Column({ name: 'project_id', type: 'varchar', length: 64, nullable: true })
  projectId: string | null;

  @Column({ type: 'varchar', length: 48 })
  type: string;

  @Column({ type: 'jsonb', default: () => "'{}'::jsonb" })
  details: Record<string, unknown>;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}
