import { codedException } from '../common/errors/orion.exception';

export enum WebhooksExceptionCode {
  WEBHOOK_URL_REFUSED = 'webhook_url_refused',
  WEBHOOK_NOT_CONFIGURED = 'webhook_not_configured',
  WEBHOOK_SETTINGS_NOT_FOUND = 'webhook_settings_not_found',
  RUN_NOT_FOUND = 'run_not_found',
}

const WEBHOOKS_STATUS: Record<WebhooksExceptionCode, number> = {
  [WebhooksExceptionCode.WEBHOOK_URL_REFUSED]: 400,
  [WebhooksExceptionCode.WEBHOOK_NOT_CONFIGURED]: 400,
  [WebhooksExceptionCode.WEBHOOK_SETTINGS_NOT_FOUND]: 404,
  [WebhooksExceptionCode.RUN_NOT_FOUND]: 404,
};

export class WebhooksException extends codedException(WEBHOOKS_STATUS) {}
