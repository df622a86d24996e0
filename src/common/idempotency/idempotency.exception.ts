import { codedException } from '../errors/orion.exception';

export enum IdempotencyExceptionCode {
  INVALID_KEY = 'invalid_idempotency_key',
  KEY_REUSED = 'idempotency_key_reused',
  KEY_IN_USE = 'idempotency_key_in_use',
}

const IDEMPOTENCY_STATUS: Record<IdempotencyExceptionCode, number> = {
  [IdempotencyExceptionCode.INVALID_KEY]: 400,
  [IdempotencyExceptionCode.KEY_REUSED]: 422,
  [IdempotencyExceptionCode.KEY_IN_USE]: 409,
};

/** The refusals of a send's `Idempotency-Key` (docs/API.md, Idempotent sends). */
export class IdempotencyException extends codedException(IDEMPOTENCY_STATUS) {}

/** 422: the key names a request with another route or body; nothing was started or stored. */
export function keyReused(key: string, requestId: string): IdempotencyException {
  return new IdempotencyException(
    IdempotencyExceptionCode.KEY_REUSED,
    `Idempotency-Key ${JSON.stringify(key)} was first sent with another route or body (request ${requestId}); a key stands for one request: send a new key for a new request. Nothing was started or stored`,
    { requestId },
  );
}

/** 409: the request the key names has not started its run yet (queued, or being opened); retry shortly. */
export function keyInUse(key: string, requestId: string, why: string): IdempotencyException {
  return new IdempotencyException(IdempotencyExceptionCode.KEY_IN_USE, `Idempotency-Key ${JSON.stringify(key)}: request ${requestId} ${why}; send the same request again shortly. Nothing was started`, {
    requestId,
    retryAfter: 1,
  });
}
