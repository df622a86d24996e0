import { codedException } from '../common/errors/orion.exception';
import type { RunEntity } from './entities/run.entity';

export enum RunsExceptionCode {
  RUN_NOT_FOUND = 'run_not_found',
  RUN_NOT_RESUMABLE = 'run_not_resumable',
  RUN_FINISHED = 'run_finished',
  RUN_CANCELLED = 'run_cancelled',
  CHECKPOINT_NOT_FOUND = 'checkpoint_not_found',
  RESUME_IN_PROGRESS = 'resume_in_progress',
  RUN_IN_PROGRESS = 'run_in_progress',
  APPROVAL_NOT_FOUND = 'approval_not_found',
  APPROVAL_NOT_PENDING = 'approval_not_pending',
  RUN_NOT_AWAITING = 'run_not_awaiting',
  INVALID_APPROVAL = 'invalid_approval',
}

const RUNS_STATUS: Record<RunsExceptionCode, number> = {
  [RunsExceptionCode.RUN_NOT_FOUND]: 404,
  [RunsExceptionCode.CHECKPOINT_NOT_FOUND]: 404,
  [RunsExceptionCode.RUN_NOT_RESUMABLE]: 409,
  [RunsExceptionCode.RUN_FINISHED]: 409,
  [RunsExceptionCode.RUN_CANCELLED]: 409,
  [RunsExceptionCode.RESUME_IN_PROGRESS]: 409,
  [RunsExceptionCode.RUN_IN_PROGRESS]: 409,
  [RunsExceptionCode.APPROVAL_NOT_FOUND]: 404,
  [RunsExceptionCode.APPROVAL_NOT_PENDING]: 409,
  [RunsExceptionCode.RUN_NOT_AWAITING]: 409,
  [RunsExceptionCode.INVALID_APPROVAL]: 400,
};

export class RunsException extends codedException(RUNS_STATUS) {}

/** The run, or RUN_NOT_FOUND (404) when there is none. */
export async function requireRun(runs: { findById(requestId: string): Promise<RunEntity | null> }, requestId: string): Promise<RunEntity> {
  const r = await runs.findById(requestId);
  if (!r) throw new RunsException(RunsExceptionCode.RUN_NOT_FOUND, `Run ${requestId} not found`);
  return r;
}
