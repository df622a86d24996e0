import { Module } from '@nestjs/common';
import { ToolsModule } from '../tools/tools.module';
import { MetricsController } from './metrics.controller';
import { MetricsService } from './metrics.service';
import { ObservabilityWiring } from './observability.wiring';

/**
 * Prometheus metrics at /metrics and OpenTelemetry spans, both derived from the trace records
 * of each turn (TraceWriterService.observe) plus what only the LLM adapters see (LlmEvents).
 */
@Module({
  imports: [ToolsModule],
  controllers: [MetricsController],
  providers: [MetricsService, ObservabilityWiring],
  exports: [MetricsService],
})
export class ObservabilityModule {}
