import { codedException } from '../common/errors/orion.exception';

export enum AdminExceptionCode {
  FIRST_KEY_NOT_ADMIN = 'first_key_not_admin',
  LAST_ADMIN_KEY = 'last_admin_key',
}

const ADMIN_STATUS: Record<AdminExceptionCode, number> = {
  [AdminExceptionCode.FIRST_KEY_NOT_ADMIN]: 409,
  [AdminExceptionCode.LAST_ADMIN_KEY]: 409,
};

export class AdminException extends codedException(ADMIN_STATUS) {}
