import { codedException } from '../common/errors/orion.exception';

export enum ChatExceptionCode {
  TWO_STAGE_DISABLED = 'two_stage_disabled',
  CONVERSATION_NOT_FOUND = 'conversation_not_found',
  MODEL_NOT_ALLOWED = 'model_not_allowed',
  CONVERSATION_BUSY = 'conversation_busy',
  BUDGET_EXHAUSTED = 'budget_exhausted',
  BUDGET_NOT_FOUND = 'budget_not_found',
  BUDGET_COST_UNPRICED = 'budget_cost_unpriced',
}

const CHAT_STATUS: Record<ChatExceptionCode, number> = {
  [ChatExceptionCode.TWO_STAGE_DISABLED]: 404,
  [ChatExceptionCode.CONVERSATION_NOT_FOUND]: 404,
  [ChatExceptionCode.MODEL_NOT_ALLOWED]: 400,
  [ChatExceptionCode.CONVERSATION_BUSY]: 409,
  [ChatExceptionCode.BUDGET_EXHAUSTED]: 429,
  [ChatExceptionCode.BUDGET_NOT_FOUND]: 404,
  [ChatExceptionCode.BUDGET_COST_UNPRICED]: 400,
};

export class ChatException extends codedException(CHAT_STATUS) {}

/** 400 model_not_allowed: `name` is not one of the models a turn may use. */
export function modelNotAllowed(name: string, allowed: readonly string[], where: string): ChatException {
  return new ChatException(ChatExceptionCode.MODEL_NOT_ALLOWED, `${where} ${JSON.stringify(name)} is not an allowed model (allowed: ${allowed.join(', ')}); nothing was stored`, { allowed: [...allowed] });
}
