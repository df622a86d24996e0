import type { LlmToolSpec } from '../../llm/llm-adapter.port';
import type { ToolRunner } from '../../tools/tool-runner.port';
import type { ApprovedCall, DecidedCall, DecidedPlan, ExecutionProgress, ToolCallsError, ToolCallsResult, ToolExecution, ToolMode, ToolModeInput, ToolModeProgress } from './tool-calls-result';
import { finishResult, logResult, type DecisionDeps } from './tool-decision';

/** What a call cut off by its instance's death reads when it is not read-only (it is not run again). */
export const INTERRUPTED_MESSAGE = 'The instance running this call stopped while it ran: it may or may not have run, and it is not run again (the tool is not read-only)';

/**
 * Executes a decision's calls in order through the ToolRunner, each validated first (a call to a
 * tool that was not exposed is never run). With a journal (a keyed execution) each call is
 * stored as running before it runs and with its execution once it finished; `from` is what a
 * continued execution already has: its finished calls are not run again, and the call that was
 * running runs again only when its tool is read-only, else it is `interrupted`.
 */
export async function* executeDecided(
  deps: DecisionDeps,
  mode: ToolMode,
  input: ToolModeInput,
  plan: DecidedPlan,
  specs: LlmToolSpec[],
  started: number,
  from?: ExecutionProgress,
): AsyncGenerator<ToolModeProgress, ToolCallsResult, undefined> {
  const { requestId, projectId } = input;
  const { exposedTools, calls, shown, candidates } = plan;
  const exposed = new Set(exposedTools);
  const approved = approvedSignatures(deps.tools, input.approvedCalls ?? [], projectId);
  const executions: ToolExecution[] = [...(from?.executions ?? [])];
  // the approvals the finished calls used are used up
  for (const [i] of executions.entries()) if (isRunnable(calls[i], exposed)) takeApproval(approved, deps.tools.signature(request(calls[i]), projectId));
  for (let index = executions.length; index < calls.length; index++) {
    const call = calls[index];
    let execution: ToolExecution;
    const refusal = refusalOf(call, exposed);
    if (refusal) {
      const schema = specs.find((s) => s.name === call.toolName)?.parameters;
      execution = invalid(shown[index], refusal, exposedTools, schema);
      deps.trace.record({ requestId, projectId, type: 'tool_call_refused', details: { mode, index, toolName: call.toolName, reason: refusal } });
    } else if (from?.running === index && !(deps.tools.readOnly?.(call.toolName) ?? false)) {
      execution = { toolName: call.toolName, args: shown[index].args, outcome: 'interrupted', resultObject: { error: 'interrupted', message: INTERRUPTED_MESSAGE }, latencyMs: 0, isError: true };
      deps.trace.record({ requestId, projectId, type: 'tool_call_interrupted', details: { mode, index, toolName: call.toolName } });
    } else {
      await input.journal?.starting(index);
      // a tool-only caller has nobody to ask while it waits: a call that needs a person and was
      // not approved earlier comes back as `approval_required`, not run
      const granted = takeApproval(approved, deps.tools.signature(request(call), projectId));
      const r = await deps.tools.run(request(call), { projectId, requestId, signal: input.signal, approval: { setting: 'policy', granted } });
      execution = {
        toolName: call.toolName, args: deps.tools.redactArgs(call.toolName, r.args), outcome: r.outcome, resultObject: r.output, latencyMs: r.latencyMs,
        isError: r.isError || r.outcome !== 'success', ...(r.approval ? { approval: r.approval } : {}),
      };
    }
    executions.push(execution);
    await input.journal?.finished(executions);
    yield { stage: 'ExecuteTool', index, toolName: call.toolName, outcome: execution.outcome, latencyMs: execution.latencyMs };
  }
  // a tool that ran and failed is not an orchestration error: its execution's outcome says so
  const error: ToolCallsError | null = executions.some((e) => e.outcome === 'validation_error') ? 'invalid_args' : null;
  return finishResult(mode, input, started, { exposedTools, decidedCalls: shown, executions, error, candidates });
}

/**
 * Continues a keyed execution a retry took over, from its stored decision: the model is not
 * asked again and the tools are the ones it was offered (their schemas, for refusals, as now).
 */
export async function* continueDecided(deps: DecisionDeps, mode: ToolMode, input: ToolModeInput, from: ExecutionProgress & { plan: DecidedPlan }, started: number) {
  const { plan } = from;
  deps.trace.record({
    requestId: input.requestId, projectId: input.projectId, type: 'tool_execution_continued',
    details: { mode, decided: plan.calls.length, finished: from.executions.length, cutOff: from.running },
  });
  yield { stage: 'LLMDecision', decidedCalls: plan.shown } satisfies ToolModeProgress;
  const specs = plan.exposedTools.length ? await deps.tools.specs({ names: plan.exposedTools }) : [];
  const result = yield* executeDecided(deps, mode, input, plan, specs, started, from);
  logResult(deps.logger, result);
  return result;
}

function request(call: DecidedCall) {
  return { name: call.toolName, arguments: call.args as Record<string, unknown> };
}

function isRunnable(call: DecidedCall, exposed: Set<string>): boolean {
  return refusalOf(call, exposed) === null;
}

function refusalOf(call: DecidedCall, exposed: Set<string>): string | null {
  return !call.toolName
    ? 'the call has no tool name'
    : !exposed.has(call.toolName)
      ? `tool ${call.toolName} was not offered in this request`
      : call.args === null || typeof call.args !== 'object' || Array.isArray(call.args)
        ? `arguments must be a JSON object, got ${describe(call.args)}`
        : null;
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
