import { OrionException } from '../common/errors/orion.exception';

export enum ChatExceptionCode {
  TWO_STAGE_DISABLED = 'two_stage_disabled',
  CONVERSATION_NOT_FOUND = 'conversation_not_found',
}

export class ChatException extends OrionException<ChatExceptionCode> {
  httpStatus(): number {
    switch (this.code) {
      case ChatExceptionCode.TWO_STAGE_DISABLED:
      case ChatExceptionCode.CONVERSATION_NOT_FOUND:
        return 404;
    }
  }
}
