import { Inject, Module, type FactoryProvider, type InjectionToken, type OnModuleInit, type Type } from '@nestjs/common';
import { ListFilesTool } from './builtins/list-files.tool';
import { ReadFileTool } from './builtins/read-file.tool';
import { FetchPagesBatchTool, FetchPageTool } from './builtins/fetch-page.tool';
import { WebSearchTool } from './builtins/web-search.tool';
import { AppConfigService } from '../config/app-config.service';
import { KnowledgeModule } from '../knowledge/knowledge.module';
import { KNOWLEDGE_RETRIEVER, type KnowledgeRetriever } from '../knowledge/knowledge-retriever.port';
import { RagQueryTool } from './builtins/rag-query.tool';
import type { ToolDefinition } from './tool-definition';
import { ToolRegistryService } from './tool-registry.service';
import { TOOL_RUNNER } from './tool-runner.port';
import { ToolRunnerService } from './tool-runner.service';
import { ToolsController } from './tools.controller';
import { McpClientManagerService } from './mcp/mcp-client-manager.service';
import { McpToolPinsService } from './mcp/mcp-tool-pins.service';
import { McpToolPinRepository } from './mcp/repositories/mcp-tool-pin.repository';
import { DefaultProjectFolder } from './default-project-folder';
import { ApprovalOverridesService } from './approval/approval-overrides.service';
import { ApprovalOverrideRepository } from './approval/repositories/approval-override.repository';

/** The built-in tool instances, collected by BUILTIN_TOOL_PROVIDERS below. */
export const BUILTIN_TOOLS: InjectionToken<ToolDefinition[]> = Symbol('BUILTIN_TOOLS');

/**
 * Built-in tools registered when the module starts: provider classes implementing
 * ToolDefinition, or `{ provide: SomeTool, useFactory, inject }` providers for tools built
 * from options.
 *
 * Tools built from options (fetch_page, fetch_pages_batch, web_search, rag_query) go in as
 * factory providers.
 */
const BUILTIN_TOOL_PROVIDERS: Array<Type<ToolDefinition> | FactoryProvider<ToolDefinition>> = [
  ListFilesTool,
  ReadFileTool,
  { provide: FetchPageTool, useFactory: (c: AppConfigService) => FetchPageTool.fromConfig(c), inject: [AppConfigService] },
  { provide: FetchPagesBatchTool, useFactory: (c: AppConfigService) => FetchPagesBatchTool.fromConfig(c), inject: [AppConfigService] },
  { provide: WebSearchTool, useFactory: (c: AppConfigService) => WebSearchTool.fromConfig(c), inject: [AppConfigService] },
  { provide: RagQueryTool, useFactory: (r: KnowledgeRetriever) => new RagQueryTool(r), inject: [KNOWLEDGE_RETRIEVER] },
];
const BUILTIN_TOOL_TOKENS = BUILTIN_TOOL_PROVIDERS.map((p) => ('provide' in p ? p.provide : p));

/**
 * Tools: the registry (built-ins + MCP, allow/deny lists), the runner (the only way a tool
 * runs; also provided as the TOOL_RUNNER port protocols depend on) and `GET /api/tools`.
 * Needs the global AppConfigModule and TraceModule (TRACE_SINK).
 */
@Module({
  imports: [KnowledgeModule],
  controllers: [ToolsController],
  providers: [
    ToolRegistryService,
    ToolRunnerService,
    { provide: TOOL_RUNNER, useExisting: ToolRunnerService },
    ...BUILTIN_TOOL_PROVIDERS,
    { provide: BUILTIN_TOOLS, useFactory: (...tools: ToolDefinition[]) => tools, inject: BUILTIN_TOOL_TOKENS },
    McpToolPinRepository,
    McpToolPinsService,
    McpClientManagerService,
    DefaultProjectFolder,
    ApprovalOverrideRepository,
    ApprovalOverridesService,
  ],
  exports: [ToolRegistryService, ToolRunnerService, TOOL_RUNNER, McpClientManagerService, McpToolPinsService, ApprovalOverridesService],
})
export class ToolsModule implements OnModuleInit {
  constructor(
    private readonly registry: ToolRegistryService,
    @Inject(BUILTIN_TOOLS) private readonly builtins: ToolDefinition[],
  ) {}

  /** Registers the built-ins (TOOLS_ALLOW / TOOLS_DENY may leave some out; a name clash fails start-up). */
  onModuleInit(): void {
    for (const tool of this.builtins) this.registry.register(tool);
  }
}
