import { Module } from '@nestjs/common';
import { KEY_RESOLVER } from '../common/auth/principal';
import { ApiKeysController } from './api-keys.controller';
import { ApiKeysService } from './api-keys.service';
import { McpToolsController } from './mcp-tools.controller';
import { ToolsModule } from '../tools/tools.module';

/** Key management and MCP tool approvals (issue 14): the admin routes. */
@Module({
  imports: [ToolsModule],
  controllers: [ApiKeysController, McpToolsController],
  providers: [ApiKeysService, { provide: KEY_RESOLVER, useExisting: ApiKeysService }],
  exports: [KEY_RESOLVER, ApiKeysService],
})
export class AdminModule {}
