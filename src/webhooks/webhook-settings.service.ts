import { Injectable } from '@nestjs/common';
import { AppConfigService } from '../config/app-config.service';
import { AddressPolicy, describeVerdict } from '../common/net/address-policy';
import { WebhookSettingsRepository, type WebhookSettingsRow } from './repositories/webhook-settings.repository';
import { type DeliveryLogRow, WebhookOutboxRepository } from './repositories/webhook-outbox.repository';
import { WebhooksException, WebhooksExceptionCode } from './webhooks.exception';

/** Settings as answered: the secret only in the answer that made it. */
export type ShownSettings = Omit<WebhookSettingsRow, 'secret'> & { secret?: string };

function shown({ secret, ...row }: WebhookSettingsRow): ShownSettings {
  return secret ? { ...row, secret } : row;
}

/** Where webhooks go and how they are signed, per project; the check of a message's webhookUrl; the delivery log. */
@Injectable()
export class WebhookSettingsService {
  private readonly policy = new AddressPolicy();

  constructor(
    private readonly settings: WebhookSettingsRepository,
    private readonly outbox: WebhookOutboxRepository,
    private readonly config: AppConfigService,
  ) {}

  /**
   * Refuses a URL whose host is a private or loopback literal (`127.0.0.1`, `[::1]`,
   * `localhost`) unless WEBHOOK_ALLOW_PRIVATE is set: known before any DNS, so it is a 400 now.
   * A name that resolves to such an address is refused when a try connects (recorded in the log).
   */
  checkUrl(url: string, field: string): void {
    if (this.config.get('WEBHOOK_ALLOW_PRIVATE')) return;
    const verdict = this.policy.checkHost(new URL(url).hostname);
    if (verdict && !verdict.allowed) {
      throw new WebhooksException(WebhooksExceptionCode.WEBHOOK_URL_REFUSED, `${field} points to ${describeVerdict(verdict)}; webhooks go to public addresses unless WEBHOOK_ALLOW_PRIVATE=true`);
    }
  }

  /** A message's webhookUrl: an allowed address, and a project that can sign (it has a secret). */
  async checkTarget(url: string, projectId: string): Promise<void> {
    this.checkUrl(url, 'webhookUrl');
    if (!(await this.settings.hasSecret(projectId))) {
      throw new WebhooksException(
        WebhooksExceptionCode.WEBHOOK_NOT_CONFIGURED,
        `Project ${projectId} has no webhook signing secret yet; an admin creates it with PUT /api/admin/projects/${projectId}/webhook`,
      );
    }
  }

  /** Sets the project's default URL (undefined: unchanged, null: none); the first call makes the secret, shown in its answer only. */
  async configure(projectId: string, url: string | null | undefined): Promise<ShownSettings> {
    if (url) this.checkUrl(url, 'url');
    return shown(await this.settings.configure(projectId, url));
  }

  /** A new secret, shown once; the previous one signs too for WEBHOOK_SECRET_GRACE_MS. */
  async rotate(projectId: string): Promise<ShownSettings> {
    return shown(await this.settings.rotate(projectId, this.config.get('WEBHOOK_SECRET_GRACE_MS')));
  }

  async get(projectId: string): Promise<ShownSettings> {
    const row = await this.settings.find(projectId);
    if (!row) throw new WebhooksException(WebhooksExceptionCode.WEBHOOK_SETTINGS_NOT_FOUND, `Project ${projectId} has no webhook settings`);
    return shown(row);
  }

  async log(requestId: string): Promise<DeliveryLogRow[]> {
    const rows = await this.outbox.logOf(requestId);
    if (!rows) throw new WebhooksException(WebhooksExceptionCode.RUN_NOT_FOUND, `Run ${requestId} not found`);
    return rows;
  }
}
