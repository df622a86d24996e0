import { Module } from '@nestjs/common';
import { ToolsModule } from '../tools/tools.module';
import { OrchestrationService } from './orchestration.service';
import { PROTOCOL_STRATEGIES } from './orchestration.tokens';
import type { ProtocolStrategy } from './protocol-strategy';
import { TwoStageStrategy } from './protocols/two-stage/two-stage.strategy';
import { UnifiedStrategy } from './protocols/unified/unified.strategy';

/** Chat protocols behind one multi-provider token; OrchestrationService resolves them by name. */
@Module({
  imports: [ToolsModule],
  providers: [
    TwoStageStrategy,
    UnifiedStrategy,
    {
      provide: PROTOCOL_STRATEGIES,
      useFactory: (...strategies: ProtocolStrategy[]) => strategies,
      inject: [TwoStageStrategy, UnifiedStrategy],
    },
    OrchestrationService,
  ],
  exports: [OrchestrationService],
})
export class OrchestrationModule {}
