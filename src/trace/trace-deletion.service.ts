import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { TraceWriterService } from './trace-writer.service';
import { TraceEventRepository } from './repositories/trace-event.repository';

/**
 * Deletes the stored trace of given requests (a deleted conversation's runs). Trace rows have
 * no foreign key to runs (the trace also records requests that never became runs), so they are
 * deleted by requestId, inside the caller's transaction.
 */
@Injectable()
export class TraceDeletionService {
  constructor(
    private readonly writer: TraceWriterService,
    private readonly events: TraceEventRepository,
  ) {}

  /**
   * Stores what this instance still queues, so the deletion sees it. Call it before the
   * transaction: on PGlite (one connection) the writer's INSERT would wait for the transaction.
   */
  settle(): Promise<void> {
    return this.writer.flush();
  }

  /** Deletes the trace events of these requests; returns how many. */
  async deleteForRequests(m: EntityManager, requestIds: string[]): Promise<number> {
    if (requestIds.length === 0) return 0;
    return this.events.deleteForRequests(m, requestIds);
  }
}
