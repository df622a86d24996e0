import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { RunEventRepository } from './repositories/run-event.repository';
import { RunRepository } from './repositories/run.repository';
import { TraceDeletionService } from '../trace/trace-deletion.service';
import { RunsException, RunsExceptionCode } from './runs.exception';

/** What deleting a conversation's runs removed. */
export interface DeletedRuns {
  requestIds: string[];
  runs: number;
  runEvents: number;
  traceEvents: number;
}

/**
 * Deletes the runs of a conversation with their stored events and trace, inside the caller's
 * transaction (the conversation's owner deletes its own rows in the same one). A run still
 * running refuses the deletion: it would keep streaming, storing events and an answer into a
 * conversation that no longer exists. Paused and ended runs are deleted (a paused run waits for
 * a resume that could only continue a deleted conversation).
 */
@Injectable()
export class RunDeletionService {
  constructor(
    private readonly traces: TraceDeletionService,
    private readonly runs: RunRepository,
    private readonly events: RunEventRepository,
  ) {}

  /** Call before the transaction (see TraceDeletionService.settle). */
  settle(): Promise<void> {
    return this.traces.settle();
  }

  async deleteConversationRuns(m: EntityManager, conversationId: string): Promise<DeletedRuns> {
    // locked: a cancel, resume or sweep racing the deletion waits for it, then finds nothing
    const rows = await this.runs.lockConversationRuns(m, conversationId);
    const running = rows.find((r) => r.status === 'running' || r.status === 'awaiting_approval');
    if (running) {
      throw new RunsException(
        RunsExceptionCode.RUN_IN_PROGRESS,
        `Run ${running.request_id} of this conversation is still running: cancel it (POST /api/chat/runs/${running.request_id}/cancel) or let it end, then delete`,
        { requestId: running.request_id },
      );
    }
    const requestIds = rows.map((r) => r.request_id);
    if (requestIds.length === 0) return { requestIds, runs: 0, runEvents: 0, traceEvents: 0 };
    const traceEvents = await this.traces.deleteForRequests(m, requestIds);
    const runEvents = await this.events.deleteForRuns(m, requestIds);
    const runs = await this.runs.deleteMany(m, requestIds);
    return { requestIds, runs, runEvents, traceEvents };
  }

  /**
   * After the commit: trace records of those runs made while the transaction ran (the end of a
   * run that finished just before) are flushed and deleted too.
   */
  async deleteLateTrace(m: EntityManager, requestIds: string[]): Promise<number> {
    if (requestIds.length === 0) return 0;
    await this.traces.settle();
    return this.traces.deleteForRequests(m, requestIds);
  }
}
