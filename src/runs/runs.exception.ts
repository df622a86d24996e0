import { OrionException } from '../common/errors/orion.exception';

export enum RunsExceptionCode {
  RUN_NOT_FOUND = 'run_not_found',
  RUN_NOT_RESUMABLE = 'run_not_resumable',
  RUN_FINISHED = 'run_finished',
  RUN_CANCELLED = 'run_cancelled',
  CHECKPOINT_NOT_FOUND = 'checkpoint_not_found',
  RESUME_IN_PROGRESS = 'resume_in_progress',
  RUN_IN_PROGRESS = 'run_in_progress',
}

export class RunsException extends OrionException<RunsExceptionCode> {
  httpStatus(): number {
    switch (this.code) {
      case RunsExceptionCode.RUN_NOT_FOUND:
      case RunsExceptionCode.CHECKPOINT_NOT_FOUND:
        return 404;
      case RunsExceptionCode.RUN_NOT_RESUMABLE:
      case RunsExceptionCode.RUN_FINISHED:
      case RunsExceptionCode.RUN_CANCELLED:
      case RunsExceptionCode.RESUME_IN_PROGRESS:
      case RunsExceptionCode.RUN_IN_PROGRESS:
        return 409;
    }
  }
}
