import { Inject, Injectable, Logger } from '@nestjs/common';
import { LLM_ADAPTER, type LlmAdapter } from '../../llm/llm-adapter.port';
import { TOOL_RUNNER, type ToolRunner } from '../../tools/tool-runner.port';
import { TRACE_SINK, type TraceSink } from '../../trace/trace-sink.port';
import { ToolIndexService } from './tool-index/tool-index.service';
import type { ToolCallsResult, ToolModeInput, ToolModeProgress, ToolModeStrategy } from './tool-calls-result';
import { decideAndExecute, finishResult, logResult } from './tool-decision';

/**
 * NarrowTopK: only the top `narrowTopK` tools the tool index retrieves for the input, above
 * `minScoreThreshold`, are shown to the model. When the index is missing or disabled, or
 * retrieves nothing, the run ends there — coded, without a model call, and without falling
 * back to any other mode.
 */
@Injectable()
export class NarrowTopKStrategy implements ToolModeStrategy {
  readonly kind = 'tool-mode' as const;
  readonly name = 'NarrowTopK' as const;
  private readonly logger = new Logger('Orchestration');

  constructor(
    @Inject(LLM_ADAPTER) private readonly llm: LlmAdapter,
    @Inject(TOOL_RUNNER) private readonly tools: ToolRunner,
    @Inject(TRACE_SINK) private readonly trace: TraceSink,
    private readonly index: ToolIndexService,
  ) {}

  async *execute(input: ToolModeInput): AsyncGenerator<ToolModeProgress, ToolCallsResult, undefined> {
    const started = performance.now();
    const { narrowTopK, minScoreThreshold } = input.options;
    if (!this.index.isEnabled()) {
      yield { stage: 'PrepareTools', exposedTools: [], candidates: [] };
      return this.done(finishResult(this.name, input, started, { exposedTools: [], error: 'narrow_topk_unavailable', errorMessage: 'The tool index is disabled or not built' }), narrowTopK);
    }
    const available = new Set((await this.tools.specs()).map((s) => s.name));
    // availability filters before the cut, so the model sees up to K tools it can really call
    const candidates = (await this.index.retrieve(input.userInput, narrowTopK, minScoreThreshold, (name) => available.has(name), input.signal)).map((h) => ({
      name: h.name,
      score: h.score,
    }));
    const specs = candidates.length ? await this.tools.specs({ names: candidates.map((c) => c.name) }) : [];
    // keep the index's ranking order in what the model sees
    specs.sort((a, b) => candidates.findIndex((c) => c.name === a.name) - candidates.findIndex((c) => c.name === b.name));
    yield { stage: 'PrepareTools', exposedTools: specs.map((s) => s.name), candidates };
    if (specs.length === 0) {
      return this.done(
        finishResult(this.name, input, started, { exposedTools: [], error: 'no_candidates', errorMessage: `No tool scored at least ${minScoreThreshold} for this input`, candidates }),
        narrowTopK,
      );
    }
    const result = yield* decideAndExecute({ llm: this.llm, tools: this.tools, trace: this.trace, logger: this.logger }, this.name, input, specs, started, candidates);
    return this.done(result, narrowTopK);
  }

  private done(result: ToolCallsResult, topK: number): ToolCallsResult {
    logResult(this.logger, result, topK);
    return result;
  }
}
