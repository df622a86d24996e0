import { randomUUID } from 'node:crypto';
import type { CompletedToolCall } from '../../../llm/tool-call-accumulator';
import type { ToolRunResult } from '../../../tools/tool-definition';
import { runLeft, type ApprovalDecision, type ApprovalsPort } from '../../approvals.port';
import type { ProtocolEvent } from '../../protocol-event';
import type { ProtocolExecutionContext } from '../../protocol-strategy';
import { traceStep } from '../../protocol-steps.util';
import { AsyncEventQueue } from './async-event-queue';
import { cancelledResult, finishCall, invoke } from './unified.call';

/** A call of the step that did not run because a person must decide first. */
export interface WaitingCall {
  call: CompletedToolCall;
  /** the runner's `approval_required` answer: validated arguments and why it waits */
  asked: ToolRunResult;
  /** the approval asked already (a step continued on another instance, issue 44): awaited again */
  approvalId?: string;
  /**
   * the instance that died had acted on this approval's decision (its `approval_decided` is
   * stored): an approved call may have run, and runs again only when `rerun` (read-only)
   */
  acted?: { rerun: boolean };
}

/** What a waiting call came to. `interrupted`: no decision came (the turn was cancelled while it waited). */
export interface SettledCall {
  result: ToolRunResult;
  interrupted: boolean;
}

/** A decision as the protocol acts on it: `paused` is a denial here (see {@link settleApprovals}). */
type Decided = Exclude<ApprovalDecision, { decision: 'paused' }>;

/**
 * The calls of one step that wait for a person (issue #32, item 3), after the step's other
 * calls have run: for each, in the model's order, `approval_required` (arguments masked as
 * `tool_progress` shows them, a fresh approval id); the run engine stores the approval when it
 * handles the event, so the wait on it starts only after the event was taken. Every decision
 * is awaited concurrently and acted on as it comes: `approval_decided`, then an approved call
 * runs (granted, with a person's edited arguments when given) and a declined one gets the
 * runner's `denied` result; each closes with its `completed`|`failed` progress. It returns only
 * once every call is answered, so the model is not called again before the last decision.
 *
 * `paused` cannot really happen here (unified has no pause points: the run engine refuses a
 * pause of a unified run); should a port still answer it, the call is declined with reason
 * `paused`, since there is no checkpoint to pause at. Cancel (the signal, or a wait that
 * rejects) leaves the waiting calls unanswered: `cancelled` results, `interrupted`.
 *
 * Returns one settled call per waiting call, in the order given.
 */
export async function* settleApprovals(ctx: ProtocolExecutionContext, approvals: ApprovalsPort, waiting: WaitingCall[]): AsyncGenerator<ProtocolEvent, SettledCall[], undefined> {
  const queue = new AsyncEventQueue<ProtocolEvent>();
  const settled: Array<Promise<SettledCall>> = [];
  for (const w of waiting) {
    if (ctx.signal.aborted) {
      settled.push(Promise.resolve(interrupted(ctx, w, queue)));
      continue;
    }
    if (w.acted) {
      // decided, and sent as decided, before the instance that asked died: not asked again
      settled.push(actedOn(ctx, approvals, w, w.acted.rerun, queue));
      continue;
    }
    // asked again after a takeover: the same approval (the run engine stored and sent it then)
    const approvalId = w.approvalId ?? randomUUID();
    yield {
      type: 'approval_required',
      approvalId,
      tool: w.call.name,
      callId: w.call.id,
      arguments: ctx.tools.redactArgs(w.call.name, w.asked.args ?? w.call.args),
      reason: w.asked.approval?.reason ?? 'required',
    };
    settled.push(answer(ctx, approvals, approvalId, w, queue));
  }
  const all = Promise.all(settled).finally(() => queue.close());
  for await (const ev of queue) yield ev;
  return await all;
}

/** Waits for one decision and acts on it; rejects only when the run left this instance (see decisionOn). */
async function answer(ctx: ProtocolExecutionContext, approvals: ApprovalsPort, approvalId: string, w: WaitingCall, queue: AsyncEventQueue<ProtocolEvent>): Promise<SettledCall> {
  const d = await decisionOn(ctx, approvals, approvalId, w);
  if (!d) return interrupted(ctx, w, queue);
  const decided: ProtocolEvent = { type: 'approval_decided', approvalId, decision: d.decision, edited: d.edited, by: d.by, ...(d.reason !== undefined ? { reason: d.reason } : {}) };
  if (d.decision !== 'approve') queue.push(decided);
  // stored before the call runs: an instance that continues the step after this one died knows the call may have run
  else await queue.pushHandled(decided);
  const result = d.decision === 'approve' ? await invoke(ctx, w.call, d.arguments ? JSON.stringify(d.arguments) : w.call.arguments, queue, true) : declined(ctx, w.call, d.reason);
  finishCall(ctx, w.call, result, queue);
  return { result, interrupted: false };
}

/**
 * A decision the instance that died had acted on (issue 44): a denial is answered as denied
 * again; an approved call runs again only when read-only, any other gets the outcome
 * `interrupted` (it may or may not have run). Nothing is sent as decided a second time.
 */
async function actedOn(ctx: ProtocolExecutionContext, approvals: ApprovalsPort, w: WaitingCall, rerun: boolean, queue: AsyncEventQueue<ProtocolEvent>): Promise<SettledCall> {
  const d = await decisionOn(ctx, approvals, w.approvalId!, w);
  if (!d) return interrupted(ctx, w, queue);
  let result: ToolRunResult;
  if (d.decision !== 'approve') result = declined(ctx, w.call, d.reason);
  else if (rerun) result = await invoke(ctx, w.call, d.arguments ? JSON.stringify(d.arguments) : w.call.arguments, queue, true);
  else {
    const request = { name: w.call.name, arguments: w.call.arguments, callId: w.call.id };
    result = ctx.tools.interrupted?.(request, { projectId: ctx.projectId, requestId: ctx.requestId, signal: ctx.signal }) ?? interruptedResult(w.call);
    queue.push({ type: 'notice', code: 'tool_interrupted', message: `${w.call.name} was approved and may have run before the instance running this turn stopped; it was not run again. The model was told so.` });
  }
  finishCall(ctx, w.call, result, queue);
  return { result, interrupted: false };
}

/**
 * The decision on one approval; undefined when the turn was cancelled (or the wait failed, traced)
 * before one came. Throws when the run left this instance while it waited (handed over on shutdown).
 */
async function decisionOn(ctx: ProtocolExecutionContext, approvals: ApprovalsPort, approvalId: string, w: WaitingCall): Promise<Decided | undefined> {
  let given: ApprovalDecision;
  try {
    given = await untilAborted(approvals.await(approvalId, ctx.signal), ctx.signal);
  } catch (err) {
    // handed over on shutdown: the step waits on elsewhere, and ends here with nothing stored (as two-stage's wait)
    if (!ctx.signal.aborted && runLeft(err)) throw err;
    // the port rejects when the run is cancelled; a rejection without a cancel is traced, and ends the turn the same way
    if (!ctx.signal.aborted) traceStep(ctx, 'approval_wait_failed', { approvalId, tool: w.call.name, callId: w.call.id, message: err instanceof Error ? err.message : String(err) });
    return undefined;
  }
  if (ctx.signal.aborted) return undefined;
  return given.decision === 'paused' ? { decision: 'deny', reason: 'paused', by: null, edited: false } : given;
}

function interruptedResult(call: CompletedToolCall): ToolRunResult {
  const output = { error: 'interrupted', message: 'this call was approved and may have run before the instance running this turn stopped; it was not run again' };
  return { toolName: call.name, args: call.args, outcome: 'interrupted', output, outputText: JSON.stringify(output), truncated: false, isError: true, latencyMs: 0, sources: [], signature: null };
}

function interrupted(ctx: ProtocolExecutionContext, w: WaitingCall, queue: AsyncEventQueue<ProtocolEvent>): SettledCall {
  const result = cancelledResult(w.call);
  // the call showed `calling`: it closes like any call a cancel stopped
  finishCall(ctx, w.call, result, queue);
  return { result, interrupted: true };
}

/** The runner's answer for a declined call (traced as a call); a runner without `decline` gets the same shape here. */
function declined(ctx: ProtocolExecutionContext, call: CompletedToolCall, reason: string): ToolRunResult {
  const request = { name: call.name, arguments: call.arguments, callId: call.id };
  if (ctx.tools.decline) return ctx.tools.decline(request, { projectId: ctx.projectId, requestId: ctx.requestId, signal: ctx.signal }, reason);
  const output = { error: 'denied', message: `the user declined this call (${reason}); it was not made. Do not call it again in this turn.` };
  return { toolName: call.name, args: call.args, outcome: 'denied', output, outputText: JSON.stringify(output), truncated: false, isError: true, latencyMs: 0, sources: [], signature: null };
}

/** The port promises to reject on cancel; the turn does not depend on it keeping that promise. */
function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}
