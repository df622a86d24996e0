import { OrionException } from '../common/errors/orion.exception';

export enum OrchestrationExceptionCode {
  UNKNOWN_PROTOCOL = 'unknown_protocol',
  UNKNOWN_MODE = 'unknown_mode',
}

export class OrchestrationException extends OrionException<OrchestrationExceptionCode> {
  httpStatus(): number {
    switch (this.code) {
      case OrchestrationExceptionCode.UNKNOWN_PROTOCOL:
        return 404;
      case OrchestrationExceptionCode.UNKNOWN_MODE:
        return 400;
    }
  }
}
