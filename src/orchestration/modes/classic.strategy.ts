import { Inject, Injectable, Logger } from '@nestjs/common';
import { LLM_ADAPTER, type LlmAdapter } from '../../llm/llm-adapter.port';
import { TOOL_RUNNER, type ToolRunner } from '../../tools/tool-runner.port';
import { TRACE_SINK, type TraceSink } from '../../trace/trace-sink.port';
import type { ToolCallsResult, ToolModeInput, ToolModeProgress, ToolModeStrategy } from './tool-calls-result';
import { decideAndExecute, finishResult, logResult } from './tool-decision';

/**
 * Classic: every available tool (after the registry's allow/deny lists and each tool's
 * `isAvailable`) is shown to the model in one non-streaming decision.
 */
@Injectable()
export class ClassicStrategy implements ToolModeStrategy {
  readonly kind = 'tool-mode' as const;
  readonly name = 'Classic' as const;
  private readonly logger = new Logger('Orchestration');

  constructor(
    @Inject(LLM_ADAPTER) private readonly llm: LlmAdapter,
    @Inject(TOOL_RUNNER) private readonly tools: ToolRunner,
    @Inject(TRACE_SINK) private readonly trace: TraceSink,
  ) {}

  async *execute(input: ToolModeInput): AsyncGenerator<ToolModeProgress, ToolCallsResult, undefined> {
    const started = performance.now();
    const specs = await this.tools.specs();
    yield { stage: 'PrepareTools', exposedTools: specs.map((s) => s.name) };
    const result =
      specs.length === 0
        ? finishResult(this.name, input, started, { exposedTools: [], error: 'no_candidates', errorMessage: 'No tool is available' })
        : yield* decideAndExecute({ llm: this.llm, tools: this.tools, trace: this.trace, logger: this.logger }, this.name, input, specs, started);
    logResult(this.logger, result);
    return result;
  }
}
