import { emptyUsage } from '../../protocol-event';
import type { LlmMessage, LlmToolCall } from '../../../llm/llm-adapter.port';
import type { ToolRunResult } from '../../../tools/tool-definition';
import type { ProtocolEvent } from '../../protocol-event';
import type { ProtocolExecutionContext } from '../../protocol-strategy';
import type { CompletedToolCall, InvalidToolCall } from '../../../llm/tool-call-accumulator';
import { parseUnifiedCheckpoint, UNIFIED_CHECKPOINT_VERSION, type PendingStep, type UnifiedCheckpoint } from '../../run-state/unified-checkpoint';
import { SourcesCollector } from './unified.sources';
import type { ExecutedCall } from './unified.tool-step';
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
export function checkpointEvent(ctx: ProtocolExecutionContext, s: TurnState, phaseIndex: number, pending?: PendingCalls): ProtocolEvent {
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
    ...(pending ? { pending: pendingOf(ctx, pending) } : {}),
  };
  return { type: 'checkpoint', phaseIndex, state: state as unknown as Record<string, unknown> };
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
export function cutOffCalls(ctx: ProtocolExecutionContext, p: PendingCalls & { exact: Set<string> }): Set<string> {
  const started = new Set(ctx.resumeFrom?.startedCalls ?? []);
  return new Set(p.calls.filter((c) => started.has(c.id) && !(ctx.tools.readOnly?.(c.name) && p.exact.has(c.id))).map((c) => c.id));
}

/** The turn's state from a stored checkpoint (the taker's side), with the step whose calls are still to run, if any; the tool output it holds is untrusted again. */
export function restoredState(ctx: ProtocolExecutionContext, raw: unknown): { state: TurnState; pending?: PendingCalls & { exact: Set<string> } } {
  const c = parseUnifiedCheckpoint(raw);
  for (const step of c.steps) for (const m of step.tools) ctx.untrusted?.learn(m.content ?? '');
  const executed = new Map<string, ExecutedCall>(c.executed.map((e) => [e.digest, { callId: e.callId, digest: e.digest, name: e.name, step: e.step, phaseIndex: e.phaseIndex, result: RESTORED, resultDigest: e.resultDigest }]));
  const state: TurnState = {
    phaseIndex: c.phaseIndex,
    cycleIndex: c.cycleIndex,
    modelSteps: c.modelSteps,
    usage: ctx.resumeFrom?.fork ? emptyUsage() : { ...c.usage },
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
  return { state, ...(c.pending ? { pending: restoredPending(c.pending) } : {}) };
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
