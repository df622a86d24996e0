import { DynamicModule, Module } from '@nestjs/common';
import { APP_FILTER, APP_GUARD, APP_PIPE } from '@nestjs/core';
import { AppConfigModule } from './config/config.module';
import { DatabaseModule } from './database/database.module';
import { TraceModule } from './trace/trace.module';
import { LlmModule } from './llm/llm.module';
import { ToolsModule } from './tools/tools.module';
import { KnowledgeModule } from './knowledge/knowledge.module';
import { OrchestrationModule } from './orchestration/orchestration.module';
import { ChatModule } from './chat/chat.module';
import { UiStreamModule } from './ui-stream/ui-stream.module';
import { HealthModule } from './health/health.module';
import { WebModule } from './web/web.module';
import { ObservabilityModule } from './observability/observability.module';
import { LoggingModule } from './observability/logging';
import { AllExceptionsFilter } from './common/errors/all-exceptions.filter';
import { ApiKeyGuard } from './common/auth/api-key.guard';
import { ProjectScopeGuard } from './common/auth/project-scope.guard';
import { RequestBodyGuard } from './common/body/request-body.guard';
import { AdminModule } from './admin/admin.module';
import { OpenAiCompatModule } from './openai-compat/openai-compat.module';
import { McpServerModule } from './mcp-server/mcp-server.module';
import { A2aModule } from './a2a/a2a.module';
import { ThrottlerModule } from '@nestjs/throttler';
import { KeyThrottlerGuard } from './common/limits/key-throttler.guard';
import { DatabaseThrottlerStorage } from './common/limits/database-throttler.storage';
import { RATE_LIMIT_WINDOWS, type RateLimitWindowsPort } from './common/limits/rate-limit-windows.port';
import { TurnLimitGuard } from './common/limits/turn-limit.guard';
import { AppConfigService } from './config/app-config.service';
import { SecretsModule } from './common/secrets/secrets.module';
import { CloseIdleOnShutdown } from './common/sse/close-idle-on-shutdown';
import { FieldValidationPipe } from './common/errors/field-errors';
import { DrainModule } from './common/lifecycle/drain';

/** The whole service; `forRoot(overrides)` lets tests run several differently configured apps in one process. */
@Module({})
export class AppModule {
  static forRoot(envOverrides: Record<string, string | undefined> = {}): DynamicModule {
    return {
      module: AppModule,
      imports: [AppConfigModule.forRoot(envOverrides), DrainModule, SecretsModule, LoggingModule, DatabaseModule, TraceModule, LlmModule, KnowledgeModule, ToolsModule, OrchestrationModule, ChatModule, UiStreamModule, HealthModule, ObservabilityModule, WebModule, AdminModule, OpenAiCompatModule, McpServerModule, A2aModule,
        ThrottlerModule.forRootAsync({
          imports: [AdminModule],
          inject: [AppConfigService, RATE_LIMIT_WINDOWS],
          useFactory: (config: AppConfigService, windows: RateLimitWindowsPort) => {
            const limit = config.get('RATE_LIMIT_PER_MINUTE');
            // counted on the shared database, so the rate holds across instances
            return { throttlers: [{ ttl: 60_000, limit: limit > 0 ? limit : Number.MAX_SAFE_INTEGER }], storage: new DatabaseThrottlerStorage(windows) };
          },
        }),
      ],
      providers: [
    {
      provide: APP_PIPE,
      useValue: new FieldValidationPipe(),
    },
    { provide: APP_FILTER, useClass: AllExceptionsFilter },
    { provide: APP_GUARD, useClass: ApiKeyGuard },
    // after the key guard, so a caller without a valid key gets 401 whatever its body; before the
    // guards that read the body (project scope, turn limits)
    { provide: APP_GUARD, useClass: RequestBodyGuard },
    // after the key guard: it reads the principal the key guard sets
    { provide: APP_GUARD, useClass: ProjectScopeGuard },
    { provide: APP_GUARD, useClass: KeyThrottlerGuard },
    // after the throttler; no interceptor may sit on the @Sse routes (see TurnLimitGuard)
    { provide: APP_GUARD, useClass: TurnLimitGuard },
    CloseIdleOnShutdown,
      ],
    };
  }
}
