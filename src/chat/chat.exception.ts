import { OrionException } from '../common/errors/orion.exception';

export enum ChatExceptionCode {
  TWO_STAGE_DISABLED = 'two_stage_disabled',
  CONVERSATION_NOT_FOUND = 'conversation_not_found',
  RUN_NOT_FOUND = 'run_not_found',
  RUN_NOT_RESUMABLE = 'run_not_resumable',
  RUN_FINISHED = 'run_finished',
  CHECKPOINT_NOT_FOUND = 'checkpoint_not_found',
  RESUME_IN_PROGRESS = 'resume_in_progress',
}

export class ChatException extends OrionException<ChatExceptionCode> {
  httpStatus(): number {
    switch (this.code) {
      case ChatExceptionCode.TWO_STAGE_DISABLED:
      case ChatExceptionCode.CONVERSATION_NOT_FOUND:
      case ChatExceptionCode.RUN_NOT_FOUND:
      case ChatExceptionCode.CHECKPOINT_NOT_FOUND:
        return 404;
      case ChatExceptionCode.RUN_NOT_RESUMABLE:
      case ChatExceptionCode.RUN_FINISHED:
      case ChatExceptionCode.RESUME_IN_PROGRESS:
        return 409;
    }
  }
}
