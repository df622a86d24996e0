import type { PromptGauge } from '../../loops/token-budget';
import type { LlmErrorInfo, LlmMessage, LlmToolSpec } from '../../../llm/llm-adapter.port';
import type { ProtocolEvent, StopReason, TurnUsage } from '../../protocol-event';
import type { ProtocolExecutionContext } from '../../protocol-strategy';
import type { StepMessages, UnifiedBudget } from './unified.context-budget';
import type { SourcesCollector } from './unified.sources';
import type { ResultRecord } from '../../tool-call-guard';
import type { StrikeKind } from '../../loops/strikes';
import type { ExecutedCall } from './unified.tool-step';

/** How one model step ended (a typed outcome, so every caller handles each case). */
export type StepOutcome =
  | { kind: 'run_tools' }
  | { kind: 'final'; stopReason: StopReason; error?: LlmErrorInfo }
  /** the response repeated itself and was stopped: one tool-free call writes the answer once */
  | { kind: 'content_loop'; instruction: string; said: string };

/** Mutable state of one turn. */
export interface TurnState {
  phaseIndex: number;
  /** tool steps started so far: the cycleIndex of the envelope */
  cycleIndex: number;
  /** model calls made so far */
  modelSteps: number;
  usage: TurnUsage;
  /** history and user message as the turn started (its checkpoints keep them) */
  baseMessages: LlmMessage[];
  steps: StepMessages[];
  /** the calls that ran, by signature digest */
  executed: Map<string, ExecutedCall>;
  /** the results the model has seen, for the no-progress rule (ToolCallGuard.noProgressOf) */
  results: ResultRecord[];
  sources: SourcesCollector;
  /** loop strikes (ToolCallGuard): refused repeats, rerun tools that returned the same result again, calls that learned nothing new */
  duplicateStrikes: number;
  lastStrike?: StrikeKind;
  /** content loops this turn (the first gets one tool-free call, a second ends the turn) */
  contentLoops: number;
  /** some answer text was streamed: the next step's text starts after a paragraph break */
  wrote: boolean;
  /** the tools the latest model step was offered */
  lastOffered?: LlmToolSpec[];
  /** the last prompt as the turn token budget measured it (not checkpointed: a continued run measures afresh) */
  promptGauge?: PromptGauge;
}

/** Everything about the turn that is fixed once it starts. */
export interface TurnSetup {
  budget: UnifiedBudget;
  /** the system prompt naming the tools one step offers (a large catalog offers a subset per step) */
  systemFor: (offered: LlmToolSpec[]) => string;
  history: LlmMessage[];
  user: LlmMessage | undefined;
  specs: LlmToolSpec[];
}

/** Ends the agentic path: the turn's one `sources` event, then `error` (if any), then `done`. */
export function* finish(ctx: ProtocolExecutionContext, s: TurnState, stopReason: StopReason, error?: LlmErrorInfo): Generator<ProtocolEvent, void, undefined> {
  yield s.sources.toEvent();
  if (error && !ctx.signal.aborted) yield errorEvent(error);
  yield done(s, ctx.signal.aborted ? 'cancelled' : stopReason);
}

export function errorEvent(e: LlmErrorInfo): ProtocolEvent {
  return { type: 'error', code: `llm_${e.code}`, message: e.message, retryable: e.retryable };
}

export function done(s: TurnState, stopReason: StopReason): ProtocolEvent {
  // fullContent is what was streamed; the executor, which saw every chunk, fills it in
  return { type: 'done', fullContent: '', stopReason, usage: s.usage };
}
