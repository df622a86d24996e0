import { Column, CreateDateColumn, Entity, PrimaryGeneratedColumn } from 'typeorm';

/**
 * SSE events as sent (envelope included), for replay on reconnect: one event, or (`lastSeq` set,
 * type 'chunks') the consecutive chunk events seq…lastSeq of one write, `data` their array.
 * Unique per (request_id, seq).
 */
@Entity({ name: 'run_events' })
export class RunEventEntity {
  @PrimaryGeneratedColumn({ type: 'bigint' })
  id: string;

  @Column({ name: 'request_id', type: 'uuid' })
  requestId: string;

  @Column({ type: 'int' })
  seq: number;

  @Column({ name: 'last_seq', type: 'int', nullable: true })
  lastSeq: number | null;

  @Column({ type: 'varchar', length: 32 })
  type: string;

  @Column({ type: 'jsonb' })
  data: Record<string, unknown> | Array<Record<string, unknown>>;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  /** the run's start (runs.created_at): the table is partitioned by it, one partition per day */
  @Column({ name: 'run_created_at', type: 'timestamptz' })
  runCreatedAt: Date;
}
