import { ProjectRetentionController } from './project-retention.controller';
import { KeyBudgetController, ProjectBudgetController } from './budgets.controller';
import { UsageReportController } from './usage-report.controller';
import { ChatModule } from '../chat/chat.module';
import { OrchestrationModule } from '../orchestration/orchestration.module';
import { Module } from '@nestjs/common';
import { KEY_RESOLVER } from '../common/auth/principal';
import { ApiKeysController } from './api-keys.controller';
import { ApiKeysService } from './api-keys.service';
import { McpToolsController } from './mcp-tools.controller';
import { ToolApprovalsController } from './tool-approvals.controller';
import { WebhookSettingsController } from './webhook-settings.controller';
import { WebhooksModule } from '../webhooks/webhooks.module';
import { ToolsModule } from '../tools/tools.module';
import { RATE_LIMIT_WINDOWS } from '../common/limits/rate-limit-windows.port';
import { RateLimitWindowRepository } from './repositories/rate-limit-window.repository';

/** Key management (with the keys' rate-limit windows), MCP tool approvals (issue 14), the projects' tool approval overrides (issue 32) and webhook settings (issue 33): the admin routes. */
@Module({
  imports: [ToolsModule, WebhooksModule, ChatModule, OrchestrationModule],
  controllers: [ApiKeysController, McpToolsController, ToolApprovalsController, WebhookSettingsController, ProjectRetentionController, ProjectBudgetController, KeyBudgetController, UsageReportController],
  providers: [ApiKeysService, { provide: KEY_RESOLVER, useExisting: ApiKeysService }, RateLimitWindowRepository, { provide: RATE_LIMIT_WINDOWS, useExisting: RateLimitWindowRepository }],
  exports: [KEY_RESOLVER, ApiKeysService, RATE_LIMIT_WINDOWS],
})
export class AdminModule {}
