import { Inject, Injectable, Logger } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { OrchestrationException, OrchestrationExceptionCode } from './orchestration.exception';
import { PROTOCOL_STRATEGIES, type OrchestrationStrategy } from './orchestration.tokens';
import type { ProtocolStrategy } from './protocol-strategy';
import type { ToolCallsResult, ToolMode, ToolModeOptions, ToolModeProgress, ToolModeStrategy } from './modes/tool-calls-result';
import { finishResult, TOOL_ORCHESTRATION_LOG_PREFIX } from './modes/tool-decision';

export interface ExecuteModeRequest {
  userInput: string;
  participantIds: string[];
  projectId: string;
  mode: ToolMode;
  options: ToolModeOptions;
  requestId?: string;
  signal?: AbortSignal;
}

/**
 * Resolves strategies by name: chat protocols (`two-stage`, `unified`) and tool-only modes
 * (`Classic`, `NarrowTopK`). Two strategies with one name stop the boot. A tool-only run uses
 * exactly the mode it was given; a mode that throws becomes `isSuccess: false` with a code.
 */
@Injectable()
export class OrchestrationService {
  private readonly logger = new Logger('Orchestration');
  private readonly protocols = new Map<string, ProtocolStrategy>();
  private readonly modes = new Map<string, ToolModeStrategy>();

  constructor(@Inject(PROTOCOL_STRATEGIES) strategies: OrchestrationStrategy[]) {
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

  protocolNames(): string[] {
    return [...this.protocols.keys()];
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
    };
    let result: ToolCallsResult;
    try {
      result = yield* strategy.execute(input);
    } catch (err) {
      this.logger.error(`${TOOL_ORCHESTRATION_LOG_PREFIX} mode=${req.mode} request=${input.requestId} failed: ${(err as Error)?.stack ?? String(err)}`);
      result = finishResult(strategy.name, input, started, { exposedTools: [], error: 'internal_error', errorMessage: (err as Error)?.message ?? 'internal error' });
    }
    yield { stage: 'Finished', isSuccess: result.isSuccess, error: result.error, totalLatencyMs: result.totalLatencyMs };
    return result;
  }

  /** The same, without progress. */
  async execute(req: ExecuteModeRequest): Promise<ToolCallsResult> {
    const gen = this.executeModeStream(req);
    let step = await gen.next();
    while (!step.done) step = await gen.next();
    return step.value;
  }
}
