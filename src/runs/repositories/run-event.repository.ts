import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import type { Repository } from 'typeorm';
import { RunEventEntity } from '../entities/run-event.entity';

export interface StoredRunEvent {
  seq: number;
  type: string;
  data: Record<string, unknown>;
}

/** The events of each run's stream, for replay on reconnect. */
@Injectable()
export class RunEventRepository {
  constructor(@InjectRepository(RunEventEntity) private readonly events: Repository<RunEventEntity>) {}

  /** One multi-row INSERT; (request_id, seq) is unique, so a double write fails loudly. */
  async insertMany(requestId: string, rows: StoredRunEvent[]): Promise<void> {
    if (rows.length === 0) return;
    const params: unknown[] = [requestId];
    const tuples = rows.map((r) => {
      params.push(r.seq, r.type, JSON.stringify(r.data));
      const i = params.length;
      return `($1, $${i - 2}, $${i - 1}, $${i}::jsonb)`;
    });
    await this.events.query(`INSERT INTO run_events (request_id, seq, type, data) VALUES ${tuples.join(', ')}`, params);
  }

  /** Events with seq > afterSeq, in order. */
  async listAfter(requestId: string, afterSeq: number, limit = 5000): Promise<StoredRunEvent[]> {
    const rows = await this.events
      .createQueryBuilder('e')
      .where('e.request_id = :requestId AND e.seq > :afterSeq', { requestId, afterSeq })
      .orderBy('e.seq', 'ASC')
      .limit(limit)
      .getMany();
    return rows.map((r) => ({ seq: r.seq, type: r.type, data: r.data }));
  }

  async maxSeq(requestId: string): Promise<number> {
    const r = await this.events
      .createQueryBuilder('e')
      .select('COALESCE(MAX(e.seq), 0)', 'max')
      .where('e.request_id = :requestId', { requestId })
      .getRawOne<{ max: string | number }>();
    return Number(r?.max ?? 0);
  }
}
