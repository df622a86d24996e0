import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import type { Repository } from 'typeorm';
import { TraceEventEntity } from './trace-event.entity';
import type { TraceRecord } from './trace-sink.port';

export interface TraceQuery {
  requestId?: string;
  projectId?: string;
  types?: string[];
  limit: number;
  afterId?: number;
}

@Injectable()
export class TraceEventRepository {
  constructor(@InjectRepository(TraceEventEntity) private readonly repo: Repository<TraceEventEntity>) {}

  async insertMany(rows: TraceRecord[]): Promise<void> {
    if (rows.length === 0) return;
    const params: unknown[] = [];
    const tuples = rows.map((r) => {
      params.push(r.requestId ?? null, r.projectId ?? null, r.type, JSON.stringify(r.details ?? {}));
      const i = params.length;
      return `($${i - 3}, $${i - 2}, $${i - 1}, $${i}::jsonb)`;
    });
    await this.repo.query(`INSERT INTO trace_events (request_id, project_id, type, details) VALUES ${tuples.join(', ')}`, params);
  }

  /** Oldest first (insertion order). */
  async find(q: TraceQuery): Promise<TraceEventEntity[]> {
    const qb = this.repo.createQueryBuilder('t').orderBy('t.id', 'ASC').limit(q.limit);
    if (q.requestId) qb.andWhere('t.request_id = :requestId', { requestId: q.requestId });
    if (q.projectId) qb.andWhere('t.project_id = :projectId', { projectId: q.projectId });
    if (q.types?.length) qb.andWhere('t.type IN (:...types)', { types: q.types });
    if (q.afterId) qb.andWhere('t.id > :afterId', { afterId: q.afterId });
    return qb.getMany();
  }
}
