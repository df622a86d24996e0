import { emptyUsage } from '../../protocol-event';
import type { LlmMessage, LlmToolCall } from '../../../llm/llm-adapter.port';
import type { ToolRunResult } from '../../../tools/tool-definition';
import type { ProtocolEvent } from '../../protocol-event';
import type { ProtocolExecutionContext } from '../../protocol-strategy';
import type { CompletedToolCall, InvalidToolCall } from '../../../llm/tool-call-accumulator';
import { parseUnifiedCheckpoint, UNIFIED_AWAITING_VERSION, UNIFIED_CHECKPOINT_VERSION, type AwaitingStep, type PendingStep, type StoredToolResult, type UnifiedCheckpoint } from '../../run-state/unified-checkpoint';
import { SourcesCollector } from './unified.sources';
import type { ExecutedCall } from './unified.tool-step';
import type { WaitingCall } from './unified.approvals';
import type { TurnState } from './unified.turn';

/**
 * A unified turn's step checkpoints (issue 44): what the loop needs to go on from its last
 * completed step on another instance, yielded as the `checkpoint` event the executor stores on
 * the run row (two-stage's mechanism), after the events it follows are stored.
 */

/** A model response with calls, not yet run (or not all: the instance died while they ran). */
export interface PendingCalls {
  text: string;
  calls: CompletedToolCall[];
  invalid: InvalidToolCall[];
}

/**
 * The turn's state as a checkpoint at `phaseIndex`: its last completed tool phase (0 before the
 * first model call), or, with `pending`, the action phase whose response asked for these calls.
 */
export function checkpointEvent(ctx: ProtocolExecutionContext, s: TurnState, phaseIndex: number, pending?: PendingCalls): CheckpointEvent {
  const state: UnifiedCheckpoint = {
    schemaVersion: UNIFIED_CHECKPOINT_VERSION,
    protocol: 'unified',
    phaseIndex,
    cycleIndex: s.cycleIndex,
    modelSteps: s.modelSteps,
    baseMessages: s.baseMessages,
    steps: s.steps.map((step) => ({ assistant: shownCalls(ctx, step.assistant), tools: step.tools })),
    // only calls that ran with a signature are refused as repeats (ExecutedCall.digest)
    executed: [...s.executed.values()].flatMap((e) => (e.digest !== null && e.resultDigest !== undefined ? [{ digest: e.digest, callId: e.callId, name: e.name, step: e.step, phaseIndex: e.phaseIndex, resultDigest: e.resultDigest }] : [])),
    results: s.results.map((r) => ({ ...r })),
    sources: s.sources.snapshot(),
    duplicateStrikes: s.duplicateStrikes,
    ...(s.lastStrike ? { lastStrike: s.lastStrike } : {}),
    contentLoops: s.contentLoops,
    wrote: s.wrote,
    usage: { ...s.usage },
    ...(s.promptGauge ? { promptGauge: { ...s.promptGauge } } : {}),
    ...(pending ? { pending: pendingOf(ctx, pending) } : {}),
  };
  return { type: 'checkpoint', phaseIndex, state: state as unknown as Record<string, unknown> };
}

type CheckpointEvent = Extract<ProtocolEvent, { type: 'checkpoint' }>;

/**
 * The checkpoint of a step that asks a person (issue 44): `before`, the step's own checkpoint
 * (taken as the model asked for its calls), with what ran and what waits, stored at the tool
 * phase the step waits in. Another instance continuing from it awaits the same approvals, in
 * the same phase, and runs none of the calls that ran (two-stage's pending call, for a step).
 */
export function awaitingCheckpoint(before: CheckpointEvent, toolPhaseIndex: number, awaiting: AwaitingStep): CheckpointEvent {
  return { type: 'checkpoint', phaseIndex: toolPhaseIndex, state: { ...before.state, schemaVersion: UNIFIED_AWAITING_VERSION, awaiting } };
}

/** A call's result as an awaiting checkpoint keeps it. */
export function storedResult(r: ToolRunResult): StoredToolResult {
  return { toolName: r.toolName, outcome: r.outcome, outputText: r.outputText, truncated: r.truncated, isError: r.isError, latencyMs: r.latencyMs, sources: r.sources ?? [] };
}

/** How a step goes on from a checkpoint (issue 44), and how it stores the one it takes as it asks a person. */
export interface StepContinuation {
  /** calls an instance that died had started: answered as cut off instead of run */
  cutOff?: ReadonlySet<string>;
  /** the step waited for a person when its instance died: what ran (not run again) and what waits (awaited again) */
  awaiting?: RestoredAwaiting;
  /** the calls whose stored arguments are the model's */
  exact?: ReadonlySet<string>;
  /** the checkpoint stored once the calls that need no person ran, before the step asks */
  asking?: (step: AwaitingStep) => ProtocolEvent;
}

/** The waiting step of a checkpoint, as the tool step continues it. */
export interface RestoredAwaiting {
  ran: Map<string, ToolRunResult>;
  asked: Map<string, { approvalId: string; reason: string }>;
  cutOff: Set<string>;
  /** the asked calls whose decision the instance that died had acted on (stored `approval_decided`): they may have run */
  acted: Set<string>;
}

function restoredAwaiting(ctx: ProtocolExecutionContext, a: AwaitingStep, calls: PendingStep['calls']): RestoredAwaiting {
  const ran = new Map<string, ToolRunResult>();
  for (const { callId, result } of a.ran) {
    ctx.untrusted?.learn(result.outputText);
    const args = parseObject(calls.find((c) => c.id === callId)?.arguments ?? '{}') ?? {};
    ran.set(callId, { ...result, args, output: parseJson(result.outputText), signature: null });
  }
  const started = new Set(ctx.resumeFrom?.startedCalls ?? []);
  return {
    ran,
    asked: new Map(a.asked.map((x) => [x.callId, { approvalId: x.approvalId, reason: x.reason }])),
    cutOff: new Set(a.cutOff),
    acted: new Set(a.asked.filter((x) => started.has(x.callId)).map((x) => x.callId)),
  };
}

/** The record an awaiting checkpoint keeps of a step as it asks: its results so far, the approvals asked, the calls cut off. */
export function awaitingStep(ran: ReadonlyMap<string, ToolRunResult>, asking: WaitingCall[], cutOff: ReadonlySet<string>): AwaitingStep {
  return {
    ran: [...ran].map(([callId, result]) => ({ callId, result: storedResult(result) })),
    asked: asking.map((w) => ({ callId: w.call.id, approvalId: w.approvalId!, reason: w.asked.approval?.reason ?? 'required' })),
    cutOff: [...cutOff],
  };
}

/**
 * A call of a continued step that waited for a person: its approval is awaited again; one whose
 * decision the instance that died had acted on runs again only when read-only with the
 * arguments the model sent (`exact`).
 */
export function waitingAgain(ctx: ProtocolExecutionContext, call: CompletedToolCall, awaiting: RestoredAwaiting, exact: ReadonlySet<string>): WaitingCall | undefined {
  const asked = awaiting.asked.get(call.id);
  if (!asked) return undefined;
  const result = { toolName: call.name, args: call.args, outcome: 'approval_required', approval: { required: true, reason: asked.reason } } as ToolRunResult;
  const acted = awaiting.acted.has(call.id) ? { rerun: ctx.tools.readOnly?.(call.name) === true && exact.has(call.id) } : undefined;
  return { call, asked: result, approvalId: asked.approvalId, ...(acted && { acted }) };
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** A restored call's result is never read: a rerun compares `resultDigest`, and twins are calls of one step. */
const RESTORED: Promise<ToolRunResult> = Promise.resolve({ toolName: '', args: {}, outcome: 'success', output: null, outputText: '', truncated: false, isError: false, latencyMs: 0 } as ToolRunResult);

function pendingOf(ctx: ProtocolExecutionContext, p: PendingCalls): PendingStep {
  return {
    text: p.text,
    calls: p.calls.map((c) => {
      const shown = shownJson(ctx, c);
      return { id: c.id, name: c.name, index: c.index, arguments: shown, exact: shown === c.arguments };
    }),
    invalid: p.invalid.map((b) => ({ id: b.id, ...(b.name !== undefined ? { name: b.name } : {}), index: b.index, rawArguments: String(ctx.tools.redactArgs(b.name ?? '', b.rawArguments.slice(0, 2_000))), error: b.error })),
  };
}

/** A stored pending step as the tool step runs it; `exact`: the calls whose stored arguments are the model's. */
function restoredPending(p: PendingStep): PendingCalls & { exact: Set<string> } {
  const calls = p.calls.flatMap((c): CompletedToolCall[] => {
    const args = parseObject(c.arguments);
    return args ? [{ id: c.id, name: c.name, index: c.index, arguments: c.arguments, args }] : [];
  });
  return { text: p.text, calls, invalid: p.invalid.map((b) => ({ ...b })), exact: new Set(p.calls.filter((c) => c.exact).map((c) => c.id)) };
}

function parseObject(text: string): Record<string, unknown> | undefined {
  try {
    const v: unknown = JSON.parse(text);
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The calls of a pending step that are answered as cut off instead of run: those the dead
 * instance had started (`resumeFrom.startedCalls`), unless read-only with their arguments intact.
 */
export function cutOffCalls(ctx: ProtocolExecutionContext, p: PendingCalls & { exact: Set<string> }, awaiting?: RestoredAwaiting): Set<string> {
  // a step that waited for a person: its cut-off calls were answered so before it asked (those asked are awaited again)
  if (awaiting) return awaiting.cutOff;
  const started = new Set(ctx.resumeFrom?.startedCalls ?? []);
  return new Set(p.calls.filter((c) => started.has(c.id) && !(ctx.tools.readOnly?.(c.name) && p.exact.has(c.id))).map((c) => c.id));
}

/** The turn's state from a stored checkpoint (the taker's side), with the step whose calls are still to run, if any; the tool output it holds is untrusted again. */
export function restoredState(
  ctx: ProtocolExecutionContext,
  raw: unknown,
): { state: TurnState; pending?: PendingCalls & { exact: Set<string> }; awaiting?: RestoredAwaiting; snapshot?: CheckpointEvent } {
  const c = parseUnifiedCheckpoint(raw);
  for (const step of c.steps) for (const m of step.tools) ctx.untrusted?.learn(m.content ?? '');
  const executed = new Map<string, ExecutedCall>(c.executed.map((e) => [e.digest, { callId: e.callId, digest: e.digest, name: e.name, step: e.step, phaseIndex: e.phaseIndex, result: RESTORED, resultDigest: e.resultDigest }]));
  const state: TurnState = {
    phaseIndex: c.phaseIndex,
    cycleIndex: c.cycleIndex,
    modelSteps: c.modelSteps,
    // a fork's usage is its own; its prompts are the parent's, so the largest and the gauge stay
    usage: ctx.resumeFrom?.fork ? { ...emptyUsage(), ...(c.usage.largestPromptTokens ? { largestPromptTokens: c.usage.largestPromptTokens } : {}) } : { ...c.usage },
    ...(c.promptGauge ? { promptGauge: c.promptGauge } : {}),
    baseMessages: c.baseMessages,
    steps: c.steps,
    executed,
    results: c.results,
    sources: SourcesCollector.from(c.sources),
    duplicateStrikes: c.duplicateStrikes,
    ...(c.lastStrike ? { lastStrike: c.lastStrike } : {}),
    contentLoops: c.contentLoops,
    wrote: c.wrote,
  };
  if (!c.pending) return { state };
  // a step that waited for a person: its own checkpoint (before its calls) as it was stored, to ask again from
  const { awaiting, ...before } = c;
  // a copy: the restored state's steps grow as the turn goes on, the checkpoint stays as stored
  const snapshot: CheckpointEvent = { type: 'checkpoint', phaseIndex: c.phaseIndex, state: structuredClone({ ...before, schemaVersion: UNIFIED_CHECKPOINT_VERSION }) as unknown as Record<string, unknown> };
  return { state, pending: restoredPending(c.pending), snapshot, ...(awaiting ? { awaiting: restoredAwaiting(ctx, awaiting, c.pending.calls) } : {}) };
}

/** The assistant message with each call's arguments as the stream shows them (secret parameters masked): no argument value a tool keeps secret is stored. */
function shownCalls(ctx: ProtocolExecutionContext, m: LlmMessage): LlmMessage {
  if (!m.toolCalls?.length) return m;
  return { ...m, toolCalls: m.toolCalls.map((c): LlmToolCall => ({ ...c, arguments: shownJson(ctx, c) })) };
}

function shownJson(ctx: ProtocolExecutionContext, c: LlmToolCall): string {
  // the stream's own masking (shownArguments), for a call whose arguments may not parse
  let args: unknown;
  try {
    args = JSON.parse(c.arguments);
  } catch {
    return c.arguments;
  }
  const shown = ctx.tools.redactArgs(c.name, args);
  return JSON.stringify(shown) === JSON.stringify(args) ? c.arguments : JSON.stringify(shown);
}
