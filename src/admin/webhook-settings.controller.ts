import { Body, Controller, Get, HttpCode, Param, Post, Put } from '@nestjs/common';
import { ApiBadRequestResponse, ApiForbiddenResponse, ApiNotFoundResponse, ApiOkResponse, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import { AdminOnly } from '../common/auth/admin-only.decorator';
import { ConfigureWebhookDto, WebhookProjectParamDto, WebhookSettingsDto } from '../webhooks/dto/webhook.dto';
import type { ShownSettings } from '../webhooks/webhook-settings.service';
import { WebhookSettingsService } from '../webhooks/webhook-settings.service';

function shown(s: ShownSettings): WebhookSettingsDto {
  return {
    projectId: s.projectId,
    url: s.url,
    ...(s.secret !== undefined && { secret: s.secret }),
    secretCreatedAt: s.secretCreatedAt.toISOString(),
    previousSecretValidUntil: s.previousSecretValidUntil?.toISOString() ?? null,
  };
}

/** A project's webhooks: its default URL and its signing secret (shown once), rotated with a grace period. */
@ApiTags('admin')
@AdminOnly()
@ApiForbiddenResponse({ description: 'the key is not an admin key for every project' })
@ApiParam({ name: 'projectId', description: 'the project' })
@Controller('api/admin/projects/:projectId/webhook')
export class WebhookSettingsController {
  constructor(private readonly webhooks: WebhookSettingsService) {}

  @Put()
  @ApiOperation({ operationId: 'configureProjectWebhook', summary: 'Set the project\'s default webhook URL; the first call creates its signing secret, shown only in that answer' })
  @ApiOkResponse({ type: WebhookSettingsDto })
  @ApiBadRequestResponse({ description: 'invalid projectId or url, or url on a private address without WEBHOOK_ALLOW_PRIVATE (nothing is stored)' })
  async configure(@Param() { projectId }: WebhookProjectParamDto, @Body() dto: ConfigureWebhookDto): Promise<WebhookSettingsDto> {
    return shown(await this.webhooks.configure(projectId, dto.url));
  }

  @Get()
  @ApiOperation({ operationId: 'getProjectWebhook', summary: 'The project\'s webhook settings (never the secret)' })
  @ApiOkResponse({ type: WebhookSettingsDto })
  @ApiNotFoundResponse({ description: 'the project has no webhook settings' })
  async get(@Param() { projectId }: WebhookProjectParamDto): Promise<WebhookSettingsDto> {
    return shown(await this.webhooks.get(projectId));
  }

  @Post('rotate-secret')
  @HttpCode(200)
  @ApiOperation({ operationId: 'rotateProjectWebhookSecret', summary: 'A new signing secret, shown only in this answer; the previous one keeps signing for WEBHOOK_SECRET_GRACE_MS' })
  @ApiOkResponse({ type: WebhookSettingsDto })
  @ApiBadRequestResponse({ description: 'invalid projectId' })
  async rotate(@Param() { projectId }: WebhookProjectParamDto): Promise<WebhookSettingsDto> {
    return shown(await this.webhooks.rotate(projectId));
  }
}
