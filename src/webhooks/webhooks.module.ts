import { Module } from '@nestjs/common';
import { WebhookOutboxRepository } from './repositories/webhook-outbox.repository';
import { WebhookSettingsRepository } from './repositories/webhook-settings.repository';
import { systemResolver } from '../common/net/guarded-dispatcher';
import { WEBHOOK_RESOLVER, WebhookDeliveryService } from './webhook-delivery.service';
import { WebhookSettingsService } from './webhook-settings.service';
import { WebhooksController } from './webhooks.controller';

/**
 * Signed webhooks when a run ends (issue 33). The statements that close runs write the outbox
 * rows (announceCte, from runs' repositories); the delivery worker sends them; the settings
 * service holds each project's URL and secrets. Below runs: runs imports it, never the reverse.
 */
@Module({
  controllers: [WebhooksController],
  providers: [{ provide: WEBHOOK_RESOLVER, useValue: systemResolver }, WebhookOutboxRepository, WebhookSettingsRepository, WebhookDeliveryService, WebhookSettingsService],
  exports: [WebhookOutboxRepository, WebhookSettingsService, WebhookDeliveryService],
})
export class WebhooksModule {}
