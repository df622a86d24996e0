import { codedException } from '../common/errors/orion.exception';

export enum OrchestrationExceptionCode {
  UNKNOWN_PROTOCOL = 'unknown_protocol',
  UNKNOWN_MODE = 'unknown_mode',
}

const ORCHESTRATION_STATUS: Record<OrchestrationExceptionCode, number> = {
  [OrchestrationExceptionCode.UNKNOWN_PROTOCOL]: 404,
  [OrchestrationExceptionCode.UNKNOWN_MODE]: 400,
};

export class OrchestrationException extends codedException(ORCHESTRATION_STATUS) {}
