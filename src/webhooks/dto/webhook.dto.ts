import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional, IsUrl, Matches, MaxLength, ValidateIf } from 'class-validator';
import { PROJECT_ID_MESSAGE, PROJECT_ID_PATTERN } from '../../common/workspace/project-id';

/** Longest webhook URL accepted (a message's webhookUrl, a project's default). */
export const WEBHOOK_URL_MAX = 2048;

/** class-validator's URL rule for webhook URLs: http or https, a host (an IP literal or a name without a TLD too), no credentials. */
export const WEBHOOK_URL_RULE: Parameters<typeof IsUrl>[0] = { protocols: ['http', 'https'], require_protocol: true, require_tld: false, disallow_auth: true };

/** The project of the admin webhook routes. */
export class WebhookProjectParamDto {
  @Matches(PROJECT_ID_PATTERN, { message: PROJECT_ID_MESSAGE })
  projectId: string;
}

/** Body of PUT /api/admin/projects/:projectId/webhook. */
export class ConfigureWebhookDto {
  @ApiPropertyOptional({ type: String, nullable: true, maxLength: WEBHOOK_URL_MAX, example: 'http://127.0.0.1:8787/orion-webhook', description: 'the default URL of the project\'s webhooks (a message\'s webhookUrl beats it); null removes it; omitted: unchanged' })
  @IsOptional()
  @ValidateIf((_, v) => v !== null)
  @IsUrl(WEBHOOK_URL_RULE, { message: 'url must be an http(s) URL' })
  @MaxLength(WEBHOOK_URL_MAX)
  url?: string | null;
}

export class WebhookSettingsDto {
  @ApiProperty() projectId: string;
  @ApiProperty({ type: String, nullable: true }) url: string | null;
  @ApiPropertyOptional({ description: 'the signing secret (`whsec_…`): only in the answer that created it; store it now, it is never shown again' }) secret?: string;
  @ApiProperty({ format: 'date-time', description: 'when the current secret was made' }) secretCreatedAt: string;
  @ApiProperty({ type: String, format: 'date-time', nullable: true, description: 'until when the rotated-out secret still signs (both signatures are sent meanwhile)' })
  previousSecretValidUntil: string | null;
}

export class WebhookTryDto {
  @ApiProperty({ description: '1 for the first try' }) attempt: number;
  @ApiProperty({ format: 'date-time' }) startedAt: string;
  @ApiProperty({ type: String, format: 'date-time', nullable: true, description: 'null while in flight' }) finishedAt: string | null;
  @ApiProperty({ type: Number, nullable: true, description: 'the receiver\'s HTTP status; null when there was none' }) statusCode: number | null;
  @ApiProperty({ type: String, nullable: true, description: 'why the try failed (HTTP status, timeout, refused address, …)' }) error: string | null;
}

export class WebhookDeliveryDto {
  @ApiProperty({ example: 'msg_2f1c…', description: 'the webhook-id header: the same on every try of this event' }) webhookId: string;
  @ApiProperty({ enum: ['run.completed', 'run.cancelled', 'run.failed', 'run.awaiting_approval'] }) type: string;
  @ApiProperty() url: string;
  @ApiProperty({ enum: ['pending', 'delivered', 'failed'], description: 'failed: no tries left' }) state: string;
  @ApiProperty() attempts: number;
  @ApiProperty({ type: String, format: 'date-time', nullable: true, description: 'when the next try is due (pending only)' }) nextAttemptAt: string | null;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) deliveredAt: string | null;
  @ApiProperty({ type: String, nullable: true }) lastError: string | null;
  @ApiProperty({ format: 'date-time' }) createdAt: string;
  @ApiProperty({ type: [WebhookTryDto] }) tries: WebhookTryDto[];
}

export class WebhookLogDto {
  @ApiProperty({ format: 'uuid' }) requestId: string;
  @ApiProperty({ type: [WebhookDeliveryDto], description: 'the run\'s events, oldest first (none when no webhook URL applied to it)' }) deliveries: WebhookDeliveryDto[];
}
