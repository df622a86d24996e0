import { Module } from '@nestjs/common';
import { ToolsModule } from '../tools/tools.module';
import { KnowledgeModule } from '../knowledge/knowledge.module';
import { ClassicStrategy } from './modes/classic.strategy';
import { NarrowTopKStrategy } from './modes/narrow-top-k.strategy';
import { ToolIndexService } from './modes/tool-index/tool-index.service';
import { ToolSelectionService } from './modes/tool-index/tool-selection.service';
import { OrchestrationController } from './orchestration.controller';
import { OrchestrationService } from './orchestration.service';
import { KeyedExecutions } from './modes/keyed-executions';
import { PROTOCOL_STRATEGIES, type OrchestrationStrategy } from './orchestration.tokens';
import { TwoStageStrategy } from './protocols/two-stage/two-stage.strategy';
import { UnifiedStrategy } from './protocols/unified/unified.strategy';

/** Chat protocols and tool-only modes behind one multi-provider token; OrchestrationService resolves them by name. */
@Module({
  imports: [ToolsModule, KnowledgeModule],
  controllers: [OrchestrationController],
  providers: [
    TwoStageStrategy,
    UnifiedStrategy,
    ClassicStrategy,
    NarrowTopKStrategy,
    ToolIndexService,
    ToolSelectionService,
    {
      provide: PROTOCOL_STRATEGIES,
      useFactory: (...strategies: OrchestrationStrategy[]) => strategies,
      inject: [TwoStageStrategy, UnifiedStrategy, ClassicStrategy, NarrowTopKStrategy],
    },
    OrchestrationService,
    KeyedExecutions,
  ],
  exports: [OrchestrationService],
})
export class OrchestrationModule {}
