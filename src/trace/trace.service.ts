import { Injectable } from '@nestjs/common';
import type { TraceEventDto, TraceQueryDto } from './dto/trace-query.dto';
import { TraceEventRepository } from './repositories/trace-event.repository';
import { TraceWriterService } from './trace-writer.service';

@Injectable()
export class TraceService {
  constructor(
    private readonly repo: TraceEventRepository,
    private readonly writer: TraceWriterService,
  ) {}

  /** Flushes what this instance has queued, then reads, so a finished turn is complete. */
  async query(q: TraceQueryDto): Promise<TraceEventDto[]> {
    await this.writer.flush();
    const types = q.type ? q.type.split(',').map((t) => t.trim()).filter(Boolean) : undefined;
    const rows = await this.repo.find({ requestId: q.requestId, projectId: q.projectId, types, limit: q.limit ?? 500 });
    return rows.map((r) => ({
      id: Number(r.id),
      requestId: r.requestId,
      projectId: r.projectId,
      type: r.type,
      details: r.details,
      createdAt: r.createdAt.toISOString(),
    }));
  }
}
