import { Controller, Get, Param } from '@nestjs/common';
import { ApiNotFoundResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { ProjectScope } from '../common/auth/project-scope.decorator';
import { WebhookLogDto } from './dto/webhook.dto';
import { webhookIdOf } from './webhook-event';
import { WebhookSettingsService } from './webhook-settings.service';
import { UuidParamPipe } from '../common/errors/field-errors';

const iso = (d: Date | null) => (d ? d.toISOString() : null);

@ApiTags('runs')
@Controller('api/chat/runs')
export class WebhooksController {
  constructor(private readonly webhooks: WebhookSettingsService) {}

  @Get(':requestId/webhooks')
  @ProjectScope('run:requestId')
  @ApiOperation({ operationId: 'getRunWebhooks', summary: 'Delivery log of the run\'s webhooks: each event, its tries, status codes, next try and final state' })
  @ApiOkResponse({ type: WebhookLogDto })
  @ApiNotFoundResponse({ description: 'unknown run' })
  async log(@Param('requestId', new UuidParamPipe()) requestId: string): Promise<WebhookLogDto> {
    const rows = await this.webhooks.log(requestId);
    return {
      requestId,
      deliveries: rows.map((d) => ({
        webhookId: webhookIdOf(d.id),
        type: d.type,
        url: d.url,
        state: d.state,
        attempts: d.attempts,
        nextAttemptAt: iso(d.nextAttemptAt),
        deliveredAt: iso(d.deliveredAt),
        lastError: d.lastError,
        createdAt: d.createdAt.toISOString(),
        tries: d.tries.map((t) => ({ attempt: t.attempt, startedAt: t.startedAt.toISOString(), finishedAt: iso(t.finishedAt), statusCode: t.statusCode, error: t.error })),
      })),
    };
  }
}
