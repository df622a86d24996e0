import { Module } from '@nestjs/common';
import { ChatModule } from '../chat/chat.module';
import { McpController } from './mcp.controller';
import { McpSessionsService } from './mcp-sessions.service';
import { McpTurnsService } from './mcp-turns.service';

/** The MCP server edge (/mcp): Orion as a tool for MCP clients, over the same turns, runs and traces as every route. */
@Module({
  imports: [ChatModule],
  controllers: [McpController],
  providers: [McpSessionsService, McpTurnsService],
})
export class McpServerModule {}
