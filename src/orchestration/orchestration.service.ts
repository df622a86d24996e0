import { trustedText, UntrustedValues, withUntrustedMasking } from './untrusted-output';
import { Inject, Injectable, Logger, Optional, type OnApplicationBootstrap } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { filter, lastValueFrom } from 'rxjs';
import { badFields } from '../common/errors/field-errors';
import { fromGenerator } from '../common/sse/from-generator';
import { AppConfigService } from '../config/app-config.service';
import { KNOWLEDGE_RETRIEVER, type KnowledgeRetriever } from '../knowledge/knowledge-retriever.port';
import { LLM_ADAPTER, type LlmAdapter } from '../llm/llm-adapter.port';
import { LlmModels } from '../llm/llm-models';
import { TOOL_RUNNER, type ToolRunner } from '../tools/tool-runner.port';
import { TRACE_SINK, type TraceSink } from '../trace/trace-sink.port';
import type { Turn, TurnRequest } from './turn';
import { OrchestrationException, OrchestrationExceptionCode } from './orchestration.exception';
import { PROTOCOL_STRATEGIES, type OrchestrationStrategy } from './orchestration.tokens';
import type { ProtocolExecutionContext, ProtocolStrategy, TurnBudgets } from './protocol-strategy';
import { EXECUTION_TAKEN_OVER, TOOL_MODES, type ApprovedCall, type ExecutionJournal, type ToolCallsResult, type ToolMode, type ToolModeOptions, type ToolModeProgress, type ToolModeStrategy } from './modes/tool-calls-result';
import { finishResult, TOOL_ORCHESTRATION_LOG_PREFIX } from './modes/tool-decision';
import { continueDecided } from './modes/decided-calls';
import { ToolSelectionService } from './modes/tool-index/tool-selection.service';
import { ToolIndexService } from './modes/tool-index/tool-index.service';
import { contentLoopSettings } from './loops/loop-settings';
import type { ContentLoopSettings } from './loops/content-loop';
import { costOf, parsePriceTable, type PriceTable } from '../llm/llm-prices';

export interface ExecuteModeRequest {
  userInput: string;
  participantIds: string[];
  projectId: string;
  mode: ToolMode;
  options: ToolModeOptions;
  requestId?: string;
  signal?: AbortSignal;
  approvedCalls?: ApprovedCall[];
  /** a keyed execution's progress store; with a stored decision, the execution continues from it */
  journal?: ExecutionJournal;
}

/**
 * Resolves strategies by name: chat protocols (`two-stage`, `unified`) and tool-only modes
 * (`Classic`, `NarrowTopK`). Two strategies with one name stop the boot. A tool-only run uses
 * exactly the mode it was given; a mode that throws becomes `isSuccess: false` with a code.
 *
 * Builds chat turns: the protocol context with the ports a protocol uses (model, tools, trace,
 * knowledge). Callers above (chat, runs) never hold those ports.
 *
 * A tool-only request's mode and options not given fall back to the configuration
 * (ORCHESTRATION_DEFAULT_MODE, _MAX_CALLS, _TOP_K, _MIN_SCORE), resolved once, before the run.
 */
@Injectable()
export class OrchestrationService implements OnApplicationBootstrap {
  private readonly logger = new Logger('Orchestration');
  private readonly protocols = new Map<string, ProtocolStrategy>();
  private readonly modes = new Map<string, ToolModeStrategy>();

  constructor(
    @Inject(PROTOCOL_STRATEGIES) strategies: OrchestrationStrategy[],
    private readonly config: AppConfigService,
    @Inject(LLM_ADAPTER) private readonly llm: LlmAdapter,
    @Inject(TOOL_RUNNER) private readonly tools: ToolRunner,
    @Inject(TRACE_SINK) private readonly trace: TraceSink,
    @Optional() @Inject(KNOWLEDGE_RETRIEVER) private readonly knowledge?: KnowledgeRetriever,
    @Optional() private readonly toolSelection?: ToolSelectionService,
    @Optional() private readonly models?: LlmModels,
    @Optional() private readonly toolIndex?: ToolIndexService,
  ) {
    for (const s of strategies) {
      const map: Map<string, OrchestrationStrategy> = s.kind === 'tool-mode' ? this.modes : this.protocols;
      if (map.has(s.name)) throw new Error(`Duplicate ${s.kind === 'tool-mode' ? 'tool mode' : 'protocol strategy'} name: ${s.name}`);
      map.set(s.name, s);
    }
  }

  protocol(name: string): ProtocolStrategy {
    const s = this.protocols.get(name);
    if (!s) throw new OrchestrationException(OrchestrationExceptionCode.UNKNOWN_PROTOCOL, `Unknown protocol: ${name}`);
    return s;
  }

  /** A turn ready for the run engine: the protocol and its context factory. */
  buildTurn(req: TurnRequest): Turn {
    const protocol = typeof req.protocol === 'string' ? this.protocol(req.protocol) : req.protocol;
    const llm = this.adapter(req.model);
    return {
      protocol,
      model: llm.model,
      priced: (usage) => {
        const cost = costOf(this.prices(), llm.model, usage);
        return cost === undefined ? usage : { ...usage, cost };
      },
      context: (signal, control) => this.context(req, llm, signal, control),
    };
  }

  private context(req: TurnRequest, llm: LlmAdapter, signal: AbortSignal, control: ProtocolExecutionContext['control']): ProtocolExecutionContext {
    // per turn: the values its tool output brings in, and the runner that masks them when shown
    const untrusted = new UntrustedValues(trustedText(req.messages));
    return {
      requestId: req.requestId,
      projectId: req.projectId,
      conversationId: req.conversationId,
      messages: req.messages,
      mode: req.mode,
      llm,
      tools: withUntrustedMasking(this.tools, untrusted),
      trace: this.trace,
      budgets: req.budgets,
      debugShowToolResults: req.debugShowToolResults,
      signal,
      control,
      resumeFrom: req.resumeFrom,
      systemContext: req.systemContext,
      flags: { orchestratorEnabled: req.orchestratorEnabled ?? this.config.get('ORCHESTRATOR_ENABLED') },
      knowledge: this.knowledge,
      ...(this.toolSelection ? { toolSelection: this.toolSelection } : {}),
      contextWindow: req.contextWindow ?? this.config.get('LLM_CONTEXT_WINDOW'),
      untrusted,
      lastTurnTools: req.lastTurnTools ?? [],
      contentLoop: this.contentLoop(),
    };
  }

  private priceTable?: PriceTable;

  /** LLM_PRICES, read once (a bad table stops the boot: onApplicationBootstrap reads it). */
  prices(): PriceTable {
    return (this.priceTable ??= parsePriceTable(this.config.get('LLM_PRICES')));
  }

  private loopSettings?: ContentLoopSettings;

  /** The content-loop detector's thresholds from LOOP_CONTENT_REPEATS (the same object for every turn). */
  contentLoop(): ContentLoopSettings {
    return (this.loopSettings ??= contentLoopSettings(this.config.get('LOOP_CONTENT_REPEATS')));
  }

  /** The window the model really has (Ollama reports it), never more than configured. */
  async contextWindow(model?: string): Promise<number> {
    return (await this.adapter(model).capabilities().catch(() => undefined))?.contextWindow ?? this.config.get('LLM_CONTEXT_WINDOW');
  }

  /** The model a turn uses when neither its message nor its conversation names one. */
  defaultModel(): string {
    return this.models?.defaultModel ?? this.llm.model;
  }

  /** Whether a message or a conversation may pick this model (LLM_MODELS, else LLM_MODEL only). */
  allowsModel(name: string): boolean {
    return this.modelNames().includes(name);
  }

  modelNames(): readonly string[] {
    return this.models?.names() ?? [this.llm.model];
  }

  private adapter(model: string | undefined): LlmAdapter {
    return model === undefined || !this.models ? this.llm : this.models.adapter(model);
  }

  /** Budgets from the configuration, each overridable per request. */
  budgets(overrides: Partial<TurnBudgets> = {}): TurnBudgets {
    return {
      maxPhaseCycles: overrides.maxPhaseCycles ?? this.config.get('MAX_PHASE_CYCLES_PER_TURN'),
      maxDuplicateAttempts: overrides.maxDuplicateAttempts ?? this.config.get('MAX_DUPLICATE_ATTEMPTS'),
      maxIterations: overrides.maxIterations ?? this.config.get('MAX_ITERATIONS'),
      turnTokenBudget: overrides.turnTokenBudget ?? this.config.get('TURN_TOKEN_BUDGET'),
    };
  }

  protocolNames(): string[] {
    return [...this.protocols.keys()];
  }

  /**
   * Logged once every module has started (the built-in tools are registered in their module's
   * init, so a count taken any earlier says 0); MCP tools are added as their servers list them.
   */
  onApplicationBootstrap(): void {
    this.prices();
    const index = this.toolIndex;
    const state = !index ? 'toolIndex=none' : `toolIndex=${index.isEnabled() ? 'on' : 'off'}, indexedTools=${index.size}, retrieval=${index.usesEmbeddings() ? 'bm25+embedding' : 'bm25'}`;
    const o = this.modeOptions({});
    this.logger.log(
      `Orchestration ready (modes=${this.modes.size} [${[...this.modes.keys()].join(', ')}], defaultMode=${this.config.get('ORCHESTRATION_DEFAULT_MODE') ?? 'none'}, ` +
        `maxCalls=${o.maxCalls}, narrowTopK=${o.narrowTopK}, minScore=${o.minScoreThreshold}, ${state})`,
    );
  }

  /**
   * The mode a tool-only request runs in: its own, else ORCHESTRATION_DEFAULT_MODE. Neither is a
   * 400 worded as the body validation words a bad mode. Resolved once: the run never changes it.
   */
  resolveMode(requested: ToolMode | undefined): ToolMode {
    const mode = requested ?? this.config.get('ORCHESTRATION_DEFAULT_MODE');
    if (!mode) throw badFields([{ field: 'mode', message: `mode must be one of: ${TOOL_MODES.join(', ')} (required while ORCHESTRATION_DEFAULT_MODE is not set)` }]);
    this.mode(mode);
    return mode;
  }

  /** A tool-only request's options, each one it leaves out from the configuration. */
  modeOptions(given: Partial<ToolModeOptions>): ToolModeOptions {
    return {
      maxCalls: given.maxCalls ?? this.config.get('ORCHESTRATION_MAX_CALLS'),
      narrowTopK: given.narrowTopK ?? this.config.get('ORCHESTRATION_TOP_K'),
      minScoreThreshold: given.minScoreThreshold ?? this.config.get('ORCHESTRATION_MIN_SCORE'),
      locale: given.locale ?? 'en',
    };
  }

  mode(name: string): ToolModeStrategy {
    const s = this.modes.get(name);
    if (!s) throw new OrchestrationException(OrchestrationExceptionCode.UNKNOWN_MODE, `Unknown mode: ${name} (use ${[...this.modes.keys()].join(' or ')})`);
    return s;
  }

  /** Runs one tool-only orchestration, yielding progress, ending with `Finished`, returning the result. */
  async *executeModeStream(req: ExecuteModeRequest): AsyncGenerator<ToolModeProgress, ToolCallsResult, undefined> {
    const strategy = this.mode(req.mode);
    const started = performance.now();
    const input = {
      requestId: req.requestId ?? randomUUID(),
      projectId: req.projectId,
      userInput: req.userInput,
      participantIds: req.participantIds,
      options: req.options,
      signal: req.signal ?? new AbortController().signal,
      approvedCalls: req.approvedCalls ?? [],
      contentLoop: this.contentLoop(),
      journal: req.journal,
    };
    const from = req.journal?.resumed;
    let result: ToolCallsResult;
    try {
      // an execution a retry took over after its decision was stored: the model is not asked again
      result = from?.plan
        ? yield* continueDecided({ llm: this.llm, tools: this.tools, trace: this.trace, logger: this.logger }, strategy.name, input, { ...from, plan: from.plan }, started)
        : yield* strategy.execute(input);
    } catch (err) {
      // another attempt owns the execution now: this one has no result to give
      if ((err as Error)?.name === EXECUTION_TAKEN_OVER) throw err;
      this.logger.error(`${TOOL_ORCHESTRATION_LOG_PREFIX} mode=${req.mode} request=${input.requestId} failed: ${(err as Error)?.stack ?? String(err)}`);
      result = finishResult(strategy.name, input, started, { exposedTools: [], error: 'internal_error', errorMessage: (err as Error)?.message ?? 'internal error' });
    }
    yield { stage: 'Finished', isSuccess: result.isSuccess, error: result.error, totalLatencyMs: result.totalLatencyMs };
    return result;
  }

  /** The same, without progress: only the result the run returns is kept. */
  execute(req: ExecuteModeRequest): Promise<ToolCallsResult> {
    const ended = fromGenerator(this.executeModeStream(req), { each: () => null, last: (result: ToolCallsResult) => result });
    return lastValueFrom(ended.pipe(filter((r): r is ToolCallsResult => r !== null)));
  }
}
