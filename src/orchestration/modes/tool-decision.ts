import { Logger } from '@nestjs/common';
import type { LlmAdapter, LlmToolSpec } from '../../llm/llm-adapter.port';
import type { ToolRunner } from '../../tools/tool-runner.port';
import type { TraceSink } from '../../trace/trace-sink.port';
import type { DecidedCall, ToolCallsError, ToolCallsResult, ToolCandidate, ToolExecution, ToolMode, ToolModeInput, ToolModeProgress } from './tool-calls-result';
import { toolModeSystemPrompt, toolModeUserMessage } from './tool-mode.prompts';
import { findContentLoop } from '../loops/find-content-loop';
import { contentLoopDetails } from '../loops/content-loop-details';
import type { StreamLoop } from '../model-stream';
import { executeDecided } from './decided-calls';

/** Fixed prefix of every tool-only log line, so operators can grep one mode run end to end. */
export const TOOL_ORCHESTRATION_LOG_PREFIX = '[ToolOrchestration]';

/** Room for a few function calls and nothing else. */
const DECISION_MAX_TOKENS = 1024;

export interface DecisionDeps {
  llm: LlmAdapter;
  tools: ToolRunner;
  trace: TraceSink;
  logger: Logger;
}

/**
 * Builds a result. `isSuccess` says the orchestration completed: calls were decided, none was
 * refused as invalid, and every one was attempted; how each tool fared is its execution's `outcome`.
 */
export function finishResult(
  mode: ToolMode,
  input: ToolModeInput,
  started: number,
  parts: { exposedTools: string[]; decidedCalls?: DecidedCall[]; executions?: ToolExecution[]; error: ToolCallsError | null; errorMessage?: string; candidates?: ToolCandidate[] },
): ToolCallsResult {
  const executions = parts.executions ?? [];
  const decidedCalls = parts.decidedCalls ?? [];
  return {
    mode,
    exposedTools: parts.exposedTools,
    decidedCalls,
    executions,
    isSuccess: parts.error === null && decidedCalls.length > 0 && executions.length === decidedCalls.length,
    error: parts.error,
    totalLatencyMs: Math.round(performance.now() - started),
    requestId: input.requestId,
    ...(parts.errorMessage ? { errorMessage: parts.errorMessage } : {}),
    ...(parts.candidates ? { candidates: parts.candidates } : {}),
  };
}

/**
 * The part both modes share once they know which tools to expose: one non-streaming model
 * decision over exactly those tools (the input alone, no history, the request id attached),
 * calls cut to `maxCalls`, then each call validated and executed in order (decided-calls.ts).
 */
export async function* decideAndExecute(
  deps: DecisionDeps,
  mode: ToolMode,
  input: ToolModeInput,
  specs: LlmToolSpec[],
  started: number,
  candidates?: ToolCandidate[],
): AsyncGenerator<ToolModeProgress, ToolCallsResult, undefined> {
  const exposedTools = specs.map((s) => s.name);
  const { requestId, projectId } = input;
  let decided: DecidedCall[];
  let looped: StreamLoop | undefined;
  try {
    deps.trace.record({ requestId, projectId, type: 'llm_request', details: { mode, tools: exposedTools, toolChoice: 'auto', nonStreaming: true } });
    const completion = await deps.llm.complete(
      {
        messages: [
          { role: 'system', content: toolModeSystemPrompt(input.options.locale) },
          { role: 'user', content: toolModeUserMessage(input.userInput, input.participantIds, input.options.locale) },
        ],
        tools: specs,
        toolChoice: 'auto',
        temperature: 0,
        maxTokens: DECISION_MAX_TOKENS,
        requestId,
        disableReasoning: true,
      },
      input.signal,
    );
    deps.trace.record({ requestId, projectId, type: 'llm_response', details: { mode, finishReason: completion.finishReason, toolCalls: completion.toolCalls.map((c) => c.name), usage: completion.usage ?? null } });
    decided = completion.toolCalls.slice(0, input.options.maxCalls).map((c) => ({ toolName: c.name ?? '', args: parseArgs(c.arguments) }));
    // the same loop rule as the chat routes (the decision is not streamed, so it is read whole:
    // DECISION_MAX_TOKENS bounds it); its calls still decide, a loop without calls is its error
    looped = findContentLoop(completion.content ?? '', completion.reasoning ?? '', input.contentLoop);
    if (looped) {
      deps.trace.record({ requestId, projectId, type: 'loop_detected', details: { kind: 'content', ...contentLoopDetails(looped), route: mode, verdict: decided.length ? 'calls_kept' : 'end' } });
    }
  } catch (err) {
    const message = (err as Error)?.message ?? String(err);
    deps.trace.record({ requestId, projectId, type: 'llm_error', details: { mode, message } });
    return finishResult(mode, input, started, { exposedTools, error: 'llm_error', errorMessage: message, candidates });
  }
  // what the caller is shown of the calls: a configured secret the model wrote is masked
  const shown: DecidedCall[] = decided.map((c) => ({ toolName: c.toolName, args: deps.tools.redactArgs(c.toolName, c.args) }));
  yield { stage: 'LLMDecision', decidedCalls: shown };
  if (decided.length === 0 && looped) {
    const errorMessage = `The model called no tool: its ${looped.in === 'reasoning' ? 'reasoning' : 'text'} repeated one passage (${looped.period} characters) ${looped.repeats} times in a row`;
    return finishResult(mode, input, started, { exposedTools, decidedCalls: shown, error: 'content_loop', errorMessage, candidates });
  }
  if (decided.length === 0) {
    return finishResult(mode, input, started, { exposedTools, decidedCalls: shown, error: 'no_tool_calls', errorMessage: 'The model called no tool', candidates });
  }

  const plan = { exposedTools, ...(candidates ? { candidates } : {}), calls: decided, shown };
  // stored before any call runs: a retry that continues this execution does not ask the model again
  await input.journal?.decided(plan);
  return yield* executeDecided(deps, mode, input, plan, specs, started);
}

/** The model's argument text: "" is a call without arguments; anything else must parse. */
function parseArgs(raw: string | null | undefined): unknown {
  if (raw === null || raw === undefined) return null;
  if (raw.trim() === '') return {};
  try {
    return JSON.parse(raw);
  } catch {
    return raw;
  }
}

/** One log line per run: the fixed prefix and the counts. */
export function logResult(logger: Logger, r: ToolCallsResult, topK?: number): void {
  const outcomes = r.executions.map((e) => e.outcome).join(',') || '-';
  logger.log(
    `${TOOL_ORCHESTRATION_LOG_PREFIX} mode=${r.mode} request=${r.requestId} exposed=${r.exposedTools.length} topK=${topK ?? '-'} decided=${r.decidedCalls.length} outcomes=${outcomes} success=${r.isSuccess} error=${r.error ?? '-'} latencyMs=${r.totalLatencyMs}`,
  );
}
