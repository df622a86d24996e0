import { parsePromptGauge, type PromptGauge } from '../loops/token-budget';
import type { LlmMessage, LlmToolCall, LlmUsage } from '../../llm/llm-adapter.port';
import type { ToolRunResult } from '../../tools/tool-definition';
import type { SourcesSnapshot } from '../protocols/unified/unified.sources';
import { CheckpointFormatError, isSourcesSnapshot } from './run-checkpoint';

/**
 * The state a unified run needs to go on after its instance died (issue 44), stored like
 * two-stage's on the run row (`runs.checkpoint.byPhase[phaseIndex]`): one after each completed
 * tool step (the model call and its calls' results), at that step's tool phase, and one at
 * phase 0 before the first model call (nothing ran yet: the turn starts again). Bump
 * UNIFIED_CHECKPOINT_VERSION when the shape changes and teach `parseUnifiedCheckpoint` to read
 * the old one: a run in flight must survive an upgrade.
 */
export const UNIFIED_CHECKPOINT_VERSION = 1;
/**
 * The version of a checkpoint whose step waits for a person (`awaiting`): a build that reads only
 * version 1 refuses it (the run is closed) rather than run the step's calls again.
 */
export const UNIFIED_AWAITING_VERSION = 2;

/** A call that ran in an earlier step: a repeat is refused (or, a `rerun` tool's, compared by digest). */
export interface UnifiedExecutedRecord {
  /** sha256 of the canonical signature (no argument values) */
  digest: string;
  callId: string;
  name: string;
  step: number;
  phaseIndex: number;
  /** sha256 of the result's text (a rerun compares it) */
  resultDigest: string;
}

export interface UnifiedCheckpoint {
  schemaVersion: number;
  protocol: 'unified';
  /** the tool phase of the step just completed (0: before the first model call); the run continues with phaseIndex + 1 */
  phaseIndex: number;
  /** completed tool steps */
  cycleIndex: number;
  /** model calls made so far */
  modelSteps: number;
  /** history and user message as the turn started */
  baseMessages: LlmMessage[];
  /** each completed step: the assistant message (its calls' arguments as shown, secrets masked) and one tool message per call */
  steps: Array<{ assistant: LlmMessage; tools: LlmMessage[] }>;
  executed: UnifiedExecutedRecord[];
  /** the results the model has seen (the no-progress rule) */
  results: Array<{ name: string; signature: string; phaseIndex: number; callId: string; progressDigest?: string }>;
  sources: SourcesSnapshot;
  duplicateStrikes: number;
  lastStrike?: 'repeat' | 'no_progress' | 'invalid';
  contentLoops: number;
  /** some answer text was streamed before the checkpoint */
  wrote: boolean;
  usage: LlmUsage & { llmCalls: number; largestPromptTokens?: number };
  /** the turn token budget's measure of the last prompt (issue 46) */
  promptGauge?: PromptGauge;
  /**
   * a checkpoint taken once a model call asked for tools, before they run (at its action phase):
   * the response, so that a continuation runs that step's calls (those that had started only when
   * read-only, the others answered as cut off). Absent at a completed step's checkpoint
   */
  pending?: PendingStep;
  /**
   * the step of `pending` waits for a person (version 2, stored at its tool phase as it asks):
   * the calls that ran meanwhile and the approvals asked, so that another instance awaits the
   * same approvals instead of running the step again
   */
  awaiting?: AwaitingStep;
}

/** A step's calls as it asked for approvals: what ran, what waits, what was answered as cut off. */
export interface AwaitingStep {
  /** the step's calls that ran before it asked, with the results the model is to read */
  ran: Array<{ callId: string; result: StoredToolResult }>;
  /** the calls that wait for a person, each with its approval */
  asked: Array<{ callId: string; approvalId: string; reason: string }>;
  /** calls an instance that died had started, answered as cut off (never run here) */
  cutOff: string[];
}

/** A call's result as a checkpoint keeps it (its arguments are the step's; `output` is read back from `outputText`). */
export type StoredToolResult = Pick<ToolRunResult, 'toolName' | 'outcome' | 'outputText' | 'truncated' | 'isError' | 'latencyMs' | 'sources'>;

/** A model response whose calls had not all run when its instance died. */
export interface PendingStep {
  text: string;
  /** `arguments` as the stream showed them; `exact` when that is what the model sent (nothing masked), so the call may run again */
  calls: Array<{ id: string; name: string; index: number; arguments: string; exact: boolean }>;
  /** calls that could not run (no name, or arguments that are not a JSON object), their text masked */
  invalid: Array<{ id: string; name?: string; index: number; rawArguments: string; error: string }>;
}

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isInt = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v) && v >= 0;
const isStr = (v: unknown): v is string => typeof v === 'string';
const isCall = (c: unknown): c is LlmToolCall => isObj(c) && isStr(c.id) && isStr(c.name) && isStr(c.arguments);
const isMessage = (m: unknown): m is LlmMessage =>
  isObj(m) &&
  ['system', 'user', 'assistant', 'tool'].includes(m.role as string) &&
  (isStr(m.content) || m.content === null) &&
  (m.toolCalls === undefined || (Array.isArray(m.toolCalls) && m.toolCalls.every(isCall))) &&
  (m.toolCallId === undefined || isStr(m.toolCallId)) &&
  (m.name === undefined || isStr(m.name));

/** Validates a stored unified checkpoint; throws CheckpointFormatError naming the first problem. */
export function parseUnifiedCheckpoint(raw: unknown): UnifiedCheckpoint {
  if (!isObj(raw)) throw new CheckpointFormatError('checkpoint is not an object');
  if (raw.protocol !== 'unified') throw new CheckpointFormatError('not a unified checkpoint');
  const v = raw.schemaVersion;
  if (v !== UNIFIED_CHECKPOINT_VERSION && v !== UNIFIED_AWAITING_VERSION) {
    throw new CheckpointFormatError(`unsupported unified checkpoint schemaVersion ${JSON.stringify(v)} (this build reads ${UNIFIED_CHECKPOINT_VERSION} and ${UNIFIED_AWAITING_VERSION})`);
  }
  if ((v === UNIFIED_AWAITING_VERSION) !== (raw.awaiting !== undefined)) throw new CheckpointFormatError(`a version ${UNIFIED_AWAITING_VERSION} checkpoint, and only one, holds the step that awaits a person`);
  if (raw.awaiting !== undefined && (!isAwaiting(raw.awaiting) || raw.pending === undefined)) {
    throw new CheckpointFormatError('awaiting must be {ran: [{callId, result}], asked: [{callId, approvalId, reason}], cutOff: [callId]}, with the pending step it waits in');
  }
  for (const k of ['phaseIndex', 'cycleIndex', 'modelSteps', 'duplicateStrikes', 'contentLoops'] as const) {
    if (!isInt(raw[k])) throw new CheckpointFormatError(`${k} must be a non-negative integer`);
  }
  if (!Array.isArray(raw.baseMessages) || !raw.baseMessages.every(isMessage)) throw new CheckpointFormatError('baseMessages must be chat messages');
  if (!Array.isArray(raw.steps) || !raw.steps.every((s) => isObj(s) && isMessage(s.assistant) && Array.isArray(s.tools) && s.tools.every(isMessage))) {
    throw new CheckpointFormatError('steps must be {assistant, tools} chat messages');
  }
  if (
    !Array.isArray(raw.executed) ||
    !raw.executed.every((e) => isObj(e) && isStr(e.digest) && isStr(e.callId) && isStr(e.name) && isInt(e.step) && isInt(e.phaseIndex) && isStr(e.resultDigest))
  ) {
    throw new CheckpointFormatError('executed must list {digest, callId, name, step, phaseIndex, resultDigest}');
  }
  if (!Array.isArray(raw.results) || !raw.results.every((r) => isObj(r) && isStr(r.name) && isStr(r.signature) && isInt(r.phaseIndex) && isStr(r.callId))) {
    throw new CheckpointFormatError('results must list {name, signature, phaseIndex, callId}');
  }
  if (!isSourcesSnapshot(raw.sources)) throw new CheckpointFormatError('sources must be a sources snapshot');
  if (typeof raw.wrote !== 'boolean') throw new CheckpointFormatError('wrote must be a boolean');
  const u = isObj(raw.usage) ? raw.usage : {};
  if (raw.pending !== undefined && !isPending(raw.pending)) throw new CheckpointFormatError('pending must be {text, calls: [{id, name, index, arguments, exact}], invalid: [{id, index, rawArguments, error}]}');
  return {
    schemaVersion: v,
    protocol: 'unified',
    phaseIndex: raw.phaseIndex as number,
    cycleIndex: raw.cycleIndex as number,
    modelSteps: raw.modelSteps as number,
    baseMessages: raw.baseMessages,
    steps: raw.steps as UnifiedCheckpoint['steps'],
    executed: raw.executed as UnifiedExecutedRecord[],
    results: raw.results as UnifiedCheckpoint['results'],
    sources: raw.sources,
    duplicateStrikes: raw.duplicateStrikes as number,
    ...(raw.lastStrike === 'repeat' || raw.lastStrike === 'no_progress' || raw.lastStrike === 'invalid' ? { lastStrike: raw.lastStrike } : {}),
    contentLoops: raw.contentLoops as number,
    wrote: raw.wrote,
    usage: {
      promptTokens: Number(u.promptTokens) || 0,
      completionTokens: Number(u.completionTokens) || 0,
      totalTokens: Number(u.totalTokens) || 0,
      llmCalls: Number(u.llmCalls) || 0,
      ...(Number(u.largestPromptTokens) > 0 ? { largestPromptTokens: Number(u.largestPromptTokens) } : {}),
    },
    ...(parsePromptGauge(raw.promptGauge) ? { promptGauge: parsePromptGauge(raw.promptGauge) } : {}),
    ...(raw.pending !== undefined ? { pending: raw.pending as PendingStep } : {}),
    ...(raw.awaiting !== undefined ? { awaiting: raw.awaiting as AwaitingStep } : {}),
  };
}

function isAwaiting(v: unknown): v is AwaitingStep {
  const isResult = (r: unknown) => isObj(r) && isStr(r.toolName) && isStr(r.outcome) && isStr(r.outputText) && typeof r.truncated === 'boolean' && typeof r.isError === 'boolean' && Array.isArray(r.sources);
  return (
    isObj(v) &&
    Array.isArray(v.ran) &&
    v.ran.every((r) => isObj(r) && isStr(r.callId) && isResult(r.result)) &&
    Array.isArray(v.asked) &&
    v.asked.every((a) => isObj(a) && isStr(a.callId) && isStr(a.approvalId) && isStr(a.reason)) &&
    Array.isArray(v.cutOff) &&
    v.cutOff.every(isStr)
  );
}

function isPending(v: unknown): v is PendingStep {
  return (
    isObj(v) &&
    isStr(v.text) &&
    Array.isArray(v.calls) &&
    v.calls.every((c) => isObj(c) && isStr(c.id) && isStr(c.name) && isInt(c.index) && isStr(c.arguments) && typeof c.exact === 'boolean') &&
    Array.isArray(v.invalid) &&
    v.invalid.every((c) => isObj(c) && isStr(c.id) && (c.name === undefined || isStr(c.name)) && isInt(c.index) && isStr(c.rawArguments) && isStr(c.error))
  );
}
