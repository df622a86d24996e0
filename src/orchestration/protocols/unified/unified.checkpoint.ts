import type { LlmMessage, LlmToolCall } from '../../../llm/llm-adapter.port';
import type { ToolRunResult } from '../../../tools/tool-definition';
import type { ProtocolEvent } from '../../protocol-event';
import type { ProtocolExecutionContext } from '../../protocol-strategy';
import { parseUnifiedCheckpoint, UNIFIED_CHECKPOINT_VERSION, type UnifiedCheckpoint } from '../../run-state/unified-checkpoint';
import { SourcesCollector } from './unified.sources';
import type { ExecutedCall } from './unified.tool-step';
import type { TurnState } from './unified.turn';

/**
 * A unified turn's step checkpoints (issue 44): what the loop needs to go on from its last
 * completed step on another instance, yielded as the `checkpoint` event the executor stores on
 * the run row (two-stage's mechanism), after the events it follows are stored.
 */

/** The turn's state as a checkpoint at `phaseIndex` (its last completed tool phase; 0 before the first model call). */
export function checkpointEvent(ctx: ProtocolExecutionContext, s: TurnState, phaseIndex: number): ProtocolEvent {
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
  };
  return { type: 'checkpoint', phaseIndex, state: state as unknown as Record<string, unknown> };
}

/** A restored call's result is never read: a rerun compares `resultDigest`, and twins are calls of one step. */
const RESTORED: Promise<ToolRunResult> = Promise.resolve({ toolName: '', args: {}, outcome: 'success', output: null, outputText: '', truncated: false, isError: false, latencyMs: 0 } as ToolRunResult);

/** The turn's state from a stored checkpoint (the taker's side); the tool output it holds is untrusted again. */
export function restoredState(ctx: ProtocolExecutionContext, raw: unknown): TurnState {
  const c = parseUnifiedCheckpoint(raw);
  for (const step of c.steps) for (const m of step.tools) ctx.untrusted?.learn(m.content ?? '');
  const executed = new Map<string, ExecutedCall>(c.executed.map((e) => [e.digest, { callId: e.callId, digest: e.digest, name: e.name, step: e.step, phaseIndex: e.phaseIndex, result: RESTORED, resultDigest: e.resultDigest }]));
  return {
    phaseIndex: c.phaseIndex,
    cycleIndex: c.cycleIndex,
    modelSteps: c.modelSteps,
    usage: { ...c.usage },
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
}

/** The assistant message with each call's arguments as the stream shows them (secret parameters masked): no argument value a tool keeps secret is stored. */
function shownCalls(ctx: ProtocolExecutionContext, m: LlmMessage): LlmMessage {
  if (!m.toolCalls?.length) return m;
  return { ...m, toolCalls: m.toolCalls.map((c): LlmToolCall => ({ ...c, arguments: shownJson(ctx, c) })) };
}

function shownJson(ctx: ProtocolExecutionContext, c: LlmToolCall): string {
  let args: unknown;
  try {
    args = JSON.parse(c.arguments);
  } catch {
    return c.arguments;
  }
  const shown = ctx.tools.redactArgs(c.name, args);
  return JSON.stringify(shown) === JSON.stringify(args) ? c.arguments : JSON.stringify(shown);
}
