import { OrionException } from '../common/errors/orion.exception';

export enum ChatExceptionCode {
  TWO_STAGE_DISABLED = 'two_stage_disabled',
  CONVERSATION_NOT_FOUND = 'conversation_not_found',
  MODEL_NOT_ALLOWED = 'model_not_allowed',
}

export class ChatException extends OrionException<ChatExceptionCode> {
  httpStatus(): number {
    switch (this.code) {
      case ChatExceptionCode.TWO_STAGE_DISABLED:
      case ChatExceptionCode.CONVERSATION_NOT_FOUND:
        return 404;
      case ChatExceptionCode.MODEL_NOT_ALLOWED:
        return 400;
    }
  }
}

/** 400 model_not_allowed: `name` is not one of the models a turn may use. */
export function modelNotAllowed(name: string, allowed: readonly string[], where: string): ChatException {
  return new ChatException(ChatExceptionCode.MODEL_NOT_ALLOWED, `${where} ${JSON.stringify(name)} is not an allowed model (allowed: ${allowed.join(', ')}); nothing was stored`, { allowed: [...allowed] });
}
