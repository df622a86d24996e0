import { Logger } from '@nestjs/common';
import type { LlmAdapter, LlmToolSpec } from '../../llm/llm-adapter.port';
import type { ToolRunner } from '../../tools/tool-runner.port';
import type { TraceSink } from '../../trace/trace-sink.port';
import type { ApprovedCall, DecidedCall, ToolCallsError, ToolCallsResult, ToolCandidate, ToolExecution, ToolMode, ToolModeInput, ToolModeProgress } from './tool-calls-result';
import { toolModeSystemPrompt, toolModeUserMessage } from './tool-mode.prompts';
import { findContentLoop } from '../loops/find-content-loop';
import { contentLoopDetails } from '../loops/content-loop-details';
import type { StreamLoop } from '../model-stream';

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
 * calls cut to `maxCalls`, then each call validated and executed in order through the
 * ToolRunner. A call to a tool that was not exposed is never run.
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

  const exposed = new Set(exposedTools);
  const approved = approvedSignatures(deps.tools, input.approvedCalls ?? [], projectId);
  const executions: ToolExecution[] = [];
  for (const [index, call] of decided.entries()) {
    let execution: ToolExecution;
    const refusal = !call.toolName
      ? 'the call has no tool name'
      : !exposed.has(call.toolName)
        ? `tool ${call.toolName} was not offered in this request`
        : call.args === null || typeof call.args !== 'object' || Array.isArray(call.args)
          ? `arguments must be a JSON object, got ${describe(call.args)}`
          : null;
    if (refusal) {
      const schema = specs.find((s) => s.name === call.toolName)?.parameters;
      execution = invalid(shown[index], refusal, exposedTools, schema);
      deps.trace.record({ requestId, projectId, type: 'tool_call_refused', details: { mode, index, toolName: call.toolName, reason: refusal } });
    } else {
      const request = { name: call.toolName, arguments: call.args as Record<string, unknown> };
      // a tool-only caller has nobody to ask while it waits: a call that needs a person and was
      // not approved earlier comes back as `approval_required`, not run
      const granted = takeApproval(approved, deps.tools.signature(request, projectId));
      const r = await deps.tools.run(request, { projectId, requestId, signal: input.signal, approval: { setting: 'policy', granted } });
      execution = {
        toolName: call.toolName, args: deps.tools.redactArgs(call.toolName, r.args), outcome: r.outcome, resultObject: r.output, latencyMs: r.latencyMs,
        isError: r.isError || r.outcome !== 'success', ...(r.approval ? { approval: r.approval } : {}),
      };
    }
    executions.push(execution);
    yield { stage: 'ExecuteTool', index, toolName: call.toolName, outcome: execution.outcome, latencyMs: execution.latencyMs };
  }
  // a tool that ran and failed is not an orchestration error: its execution's outcome says so
  const error: ToolCallsError | null = executions.some((e) => e.outcome === 'validation_error') ? 'invalid_args' : null;
  return finishResult(mode, input, started, { exposedTools, decidedCalls: shown, executions, error, candidates });
}

/** The canonical signatures of the calls a person approved, each as many times as it was listed. */
function approvedSignatures(tools: ToolRunner, calls: ApprovedCall[], projectId: string): string[] {
  return calls.map((c) => tools.signature({ name: c.tool, arguments: c.arguments }, projectId)).filter((s): s is string => s !== null);
}

/** Whether this call was approved; an approval is used up by the call it lets run (one approval, one call). */
function takeApproval(approved: string[], signature: string | null): boolean {
  if (signature === null) return false;
  const i = approved.indexOf(signature);
  if (i < 0) return false;
  approved.splice(i, 1);
  return true;
}

function invalid(call: DecidedCall, message: string, exposedTools: string[], schema?: Record<string, unknown>): ToolExecution {
  return { toolName: call.toolName, args: call.args, outcome: 'validation_error', resultObject: { error: 'invalid_args', message, exposedTools, ...(schema ? { schema } : {}) }, latencyMs: 0, isError: true };
}

function describe(v: unknown): string {
  return v === null ? 'null' : Array.isArray(v) ? 'an array' : typeof v === 'string' ? 'text that is not JSON' : typeof v;
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
