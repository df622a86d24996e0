import { Inject, Injectable, Logger, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import { AppConfigService } from '../config/app-config.service';
import type { HostResolver } from '../common/net/guarded-dispatcher';
import { type ClaimedTry, WebhookOutboxRepository } from './repositories/webhook-outbox.repository';
import { retryDelayMs } from './retry-schedule';
import { payloadJson, webhookIdOf } from './webhook-event';
import { WebhookSender } from './webhook-sender';
import { signedHeaders } from './webhook-signer';
import { WEBHOOK_INSTANCE_ID } from './webhook-instance';

/** DNS for webhook deliveries; tests replace it to play a name that resolves to a private address. */
export const WEBHOOK_RESOLVER = Symbol('WEBHOOK_RESOLVER');

/** Tries in flight at once per instance: each is one POST; a slow one holds only its own slot. */
const SLOTS = 20;

/**
 * The delivery worker, one per instance: every WEBHOOK_POLL_MS it claims the due outbox rows
 * (no two instances take the same one), POSTs each signed, and records the try. A try that
 * fails is due again after the retry schedule's delay; after WEBHOOK_MAX_ATTEMPTS tries the
 * delivery is `failed`. At least once: a try whose instance died (its outcome never recorded) is
 * claimed again once its claim lapses, with the same `webhook-id`.
 */
@Injectable()
export class WebhookDeliveryService implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('Webhooks');
  private readonly sender: WebhookSender;
  private timer: NodeJS.Timeout | null = null;
  private passing: Promise<void> | null = null;
  /** the tries being sent: a pass claims only as many as there are free slots, and does not wait for them */
  private readonly inFlight = new Set<Promise<void>>();
  private stopped = false;

  constructor(
    private readonly outbox: WebhookOutboxRepository,
    private readonly config: AppConfigService,
    @Inject(WEBHOOK_RESOLVER) resolver: HostResolver,
  ) {
    this.sender = new WebhookSender({ allowPrivate: config.get('WEBHOOK_ALLOW_PRIVATE'), timeoutMs: config.get('WEBHOOK_TIMEOUT_MS'), resolver });
  }

  onApplicationBootstrap(): void {
    this.timer = setInterval(() => void this.pass(), this.config.get('WEBHOOK_POLL_MS'));
    this.timer.unref?.();
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    await this.passing;
    await Promise.allSettled([...this.inFlight]);
    await this.sender.close();
  }

  /**
   * One pass: claims the due tries (as many as there are free slots) and starts sending them; a
   * pass still claiming is not doubled. It resolves once the tries are claimed, not sent, so a
   * receiver that never answers delays no other delivery (it keeps only its own slot).
   */
  pass(): Promise<void> {
    if (this.passing || this.stopped) return this.passing ?? Promise.resolve();
    this.passing = this.claimAndSend()
      .catch((err) => this.logger.warn(`webhook pass failed: ${(err as Error).message}`))
      .finally(() => (this.passing = null));
    return this.passing;
  }

  private async claimAndSend(): Promise<void> {
    // the claim outlives the try's deadline: no other instance takes a try still in flight
    const lease = this.config.get('WEBHOOK_TIMEOUT_MS') + 5_000;
    const free = SLOTS - this.inFlight.size;
    if (free <= 0) return;
    const tries = await this.outbox.claimDue(WEBHOOK_INSTANCE_ID, free, lease);
    for (const t of tries) {
      const sending: Promise<void> = this.attempt(t)
        .catch((err) => this.logger.warn(`webhook ${webhookIdOf(t.id)}: could not record its try: ${(err as Error).message}`))
        .finally(() => this.inFlight.delete(sending));
      this.inFlight.add(sending);
    }
  }

  private async attempt(t: ClaimedTry): Promise<void> {
    const body = payloadJson(t);
    const result = t.secrets
      ? await this.sender.send(t.url, signedHeaders(webhookIdOf(t.id), new Date(), body, t.secrets), body)
      : { statusCode: null, error: 'the project has no signing secret' };
    const delivered = result.error === null;
    const last = t.attempt >= this.config.get('WEBHOOK_MAX_ATTEMPTS') || !t.secrets;
    const state = delivered ? 'delivered' : last ? 'failed' : 'pending';
    const retryInMs = state === 'pending' ? retryDelayMs(t.attempt, this.config.get('WEBHOOK_RETRY_BASE_MS')) : 0;
    if (!delivered) this.logger.warn(`webhook ${webhookIdOf(t.id)} (run ${t.requestId}) try ${t.attempt}: ${result.error}${state === 'failed' ? '; no tries left' : ''}`);
    await this.outbox.finishTry(t.id, t.attempt, { statusCode: result.statusCode, error: result.error, state, retryInMs });
  }
}
