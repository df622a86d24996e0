import { randomUUID } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { RunEventEntity } from '../../src/runs/entities/run-event.entity';
import { RunEntity } from '../../src/runs/entities/run.entity';
import { RunEventRepository } from '../../src/runs/repositories/run-event.repository';
import { RunRepository } from '../../src/runs/repositories/run.repository';
import { RunEventWriter } from '../../src/runs/run-event-writer.service';
import { TraceEventEntity } from '../../src/trace/trace-event.entity';
import { TraceEventRepository } from '../../src/trace/repositories/trace-event.repository';
import { TraceWriterService } from '../../src/trace/trace-writer.service';
import { startDatabaseContext, type DatabaseContext } from './db-context';

/**
 * The run event writer and the trace writer on one database, nothing else of the service: for
 * the medium specs of what a run's events and its trace records commit together.
 */
export interface RunTraceContext {
  db: DatabaseContext;
  ds: DataSource;
  runs: RunRepository;
  writer: RunEventWriter;
  trace: TraceWriterService;
  /** a new running run (in one conversation made for the context) leased by `owner`; its request id */
  open(owner?: string): Promise<string>;
}

export async function startRunTraceContext(): Promise<RunTraceContext> {
  const db = await startDatabaseContext(
    [RunEntity, RunEventEntity, TraceEventEntity],
    [RunRepository, RunEventRepository, RunEventWriter, TraceEventRepository, TraceWriterService],
  );
  const runs = db.ctx.get(RunRepository);
  const [{ id: conversationId }] = (await db.ds.query(`INSERT INTO conversations (project_id, title) VALUES ('p', 't') RETURNING id`)) as Array<{ id: string }>;
  const open = async (owner = 'me') => {
    const requestId = randomUUID();
    await runs.create({ requestId, conversationId, projectId: 'p', userMessageId: null, protocol: 'unified', options: { mode: 'act', detach: true }, leaseOwner: owner, leaseMs: 30_000 });
    return requestId;
  };
  return { db, ds: db.ds, runs, writer: db.ctx.get(RunEventWriter), trace: db.ctx.get(TraceWriterService), open };
}
