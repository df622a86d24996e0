import { Column, CreateDateColumn, Entity, PrimaryGeneratedColumn } from 'typeorm';

/** One SSE event as sent (envelope included), for replay on reconnect. Unique per (request_id, seq). */
@Entity({ name: 'run_events' })
export class RunEventEntity {
  @PrimaryGeneratedColumn({ type: 'bigint' })
  id: string;

  @Column({ name: 'request_id', type: 'uuid' })
  requestId: string;

  @Column({ type: 'int' })
  seq: number;

  @Column({ type: 'varchar', length: 32 })
  type: string;

  @Column({ type: 'jsonb' })
  data: Record<string, unknown>;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}
