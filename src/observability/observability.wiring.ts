import { Inject, Injectable, OnApplicationShutdown, OnModuleInit, Optional } from '@nestjs/common';
import { SecretRegistry } from '../common/secrets/secret-registry';
import { PinoLogger } from 'nestjs-pino';
import { AppConfigService } from '../config/app-config.service';
import { LLM_ADAPTER, type LlmAdapter } from '../llm/llm-adapter.port';
import { LlmEvents } from '../llm/llm-events';
import { ToolRegistryService } from '../tools/tool-registry.service';
import { TOOL_RUNNER, type ToolRunner } from '../tools/tool-runner.port';
import { TraceWriterService } from '../trace/trace-writer.service';
import type { TraceRecord } from '../trace/trace-sink.port';
import { MetricsService } from './metrics.service';
import { flushTracing, tracingEnabled } from './tracing';
import { TurnMetricsObserver } from './turn-metrics.observer';
import { TurnSpansObserver } from './turn-spans.observer';

/** Subscribes the metrics (always) and the turn spans (when tracing is on) to the trace and the LLM adapters. */
@Injectable()
export class ObservabilityWiring implements OnModuleInit, OnApplicationShutdown {
  private readonly unsubscribe: Array<() => void> = [];

  constructor(
    private readonly trace: TraceWriterService,
    private readonly llmEvents: LlmEvents,
    private readonly metrics: MetricsService,
    private readonly config: AppConfigService,
    @Inject(LLM_ADAPTER) private readonly llm: LlmAdapter,
    @Inject(TOOL_RUNNER) private readonly tools: ToolRunner,
    private readonly registry: ToolRegistryService,
    @Optional() private readonly pino?: PinoLogger,
    @Optional() private readonly secrets: SecretRegistry = SecretRegistry.fromConfig(config),
  ) {}

  onModuleInit(): void {
    const model = { provider: this.llm.provider, model: this.llm.model };
    const metrics = new TurnMetricsObserver(this.metrics, model, (name) => this.registry.get(name) !== undefined);
    this.unsubscribe.push(this.trace.observe((r, at) => metrics.onRecord(r, at)), this.llmEvents.on((e) => metrics.onLlmEvent(e)));
    if (this.pino) this.unsubscribe.push(this.trace.observe((r) => this.tagLogs(r)));
    if (!tracingEnabled()) return;
    const captureContent = this.config.get('OTEL_CAPTURE_CONTENT');
    this.llmEvents.captureContent = captureContent;
    const spans = new TurnSpansObserver({ ...model, captureContent, redact: (text) => this.secrets.mask(text), redactToolArgs: (tool, args) => this.tools.redactArgs(tool, args) });
    this.unsubscribe.push(this.trace.observe((r, at) => spans.onRecord(r, at)), this.llmEvents.on((e) => spans.onLlmEvent(e)));
  }

  /**
   * A turn starts inside the HTTP request that asked for it: from then on every log line of that
   * request (the turn, its tools, its model calls, the request's closing line) names the turn.
   */
  private tagLogs(r: TraceRecord): void {
    if ((r.type !== 'run_started' && r.type !== 'run_resumed') || !r.requestId) return;
    try {
      this.pino!.assign({ requestId: r.requestId });
    } catch {
      // recorded outside a request (a sweeper closing a run): nothing to tag
    }
  }

  /** Not on module destroy: runs cancelled by the shutdown still record how they ended. */
  async onApplicationShutdown(): Promise<void> {
    for (const u of this.unsubscribe.splice(0)) u();
    // the spans of the last turns leave before the process does
    if (tracingEnabled()) await flushTracing().catch(() => undefined);
  }
}
