import { parsePromptGauge, type PromptGauge } from '../loops/token-budget';
import type { LlmMessage, LlmUsage } from '../../llm/llm-adapter.port';
import type { SourcesSnapshot } from '../protocols/unified/unified.sources';

/**
 * The state a two-stage run needs to continue after a pause, stored per phase on the run row
 * (`runs.checkpoint.byPhase[phaseIndex]`). Bump TWO_STAGE_CHECKPOINT_VERSION when the shape
 * changes and teach `parseTwoStageCheckpoint` to read the old one: a paused run must survive
 * an upgrade.
 */
export const TWO_STAGE_CHECKPOINT_VERSION = 1;

export interface ExecutedToolRecord {
  /** sha256 of the canonical signature (no argument values are stored) */
  signature: string;
  name: string;
  callId: string;
  /** the arguments as shown on the stream (secrets masked) */
  arguments: string;
  phaseIndex: number;
  outcome: string;
  /** sha256 of the result the model was given (a rerun compares it); absent in older checkpoints */
  resultDigest?: string;
  /** the no-progress rule's digest of the result (ToolCallGuard `progressDigest`); absent when it says nothing, and in older checkpoints */
  progressDigest?: string;
}

export interface TwoStageCheckpoint {
  schemaVersion: number;
  /**
   * the tool phase the checkpoint was taken at; the run continues with phaseIndex + 1. 0: the
   * turn's start (issue 44), stored before the first model call so a takeover can run the first
   * action phase again; it is no checkpoint a resume or fork names (runs list none at 0)
   */
  phaseIndex: number;
  cycleIndex: number;
  /** history and user message as the turn started */
  baseMessages: LlmMessage[];
  /** system messages injected so far (tool results, refusals), in order */
  injected: LlmMessage[];
  executed: ExecutedToolRecord[];
  duplicateStrikes: number;
  /** the kind of the latest loop strike (its stop reason when it spent the budget); optional, so no version bump */
  lastStrike?: 'repeat' | 'no_progress' | 'invalid';
  /** tools whose invalid arguments the model was already told about */
  toldInvalid: string[];
  usage: LlmUsage & { llmCalls: number; largestPromptTokens?: number };
  /** the turn token budget's measure of the last prompt (issue 46) */
  promptGauge?: PromptGauge;
  /**
   * the sources the turn's tools returned so far; optional, so checkpoints written before it
   * was kept still read (their resumed leg reports only its own sources) and no version bump
   */
  sources?: SourcesSnapshot;
  /**
   * the call of this tool phase that waits for a person (issue 32): the run continues from here
   * by asking again (resume after a pause) or by awaiting the same approval (takeover). Optional:
   * older checkpoints have none, so no version bump
   */
  pendingApproval?: PendingApproval;
  /**
   * the call of this tool phase that is running (issue 44): stored just before it runs, cleared
   * by the checkpoint at the phase's end. A takeover that finds it knows the call was cut off:
   * read-only, it runs again; otherwise the model is told it was interrupted, or a person is
   * asked when it needs approval. Optional: older checkpoints have none, so no version bump
   */
  runningCall?: RunningCall;
}

/** A call cut off while it ran, as its checkpoint keeps it. */
export interface RunningCall {
  /** the call as it ran (a person's edited arguments in place of the model's), its arguments as the stream shows them */
  call: { id: string; name: string; arguments: string };
  /** its arguments carried a value the stream masks (a secret is never stored): they are not its own, so it cannot run again */
  masked?: boolean;
  /** sha256 of its canonical signature, or null */
  signature: string | null;
  /** a person approved it (this run of it needed no new approval) */
  approved?: boolean;
}

/** A call that waits for a person's decision, as its checkpoint keeps it. */
export interface PendingApproval {
  approvalId: string;
  /** the model's call: its arguments are needed to run it once approved (a call carrying a configured secret never gets here) */
  call: { id: string; name: string; arguments: string };
  /** sha256 of its canonical signature, or null */
  signature: string | null;
}

export class CheckpointFormatError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CheckpointFormatError';
  }
}

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isInt = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v) && v >= 0;
const isMessage = (m: unknown): m is LlmMessage =>
  isObj(m) && ['system', 'user', 'assistant', 'tool'].includes(m.role as string) && (typeof m.content === 'string' || m.content === null);

/** Validates a stored checkpoint; throws CheckpointFormatError naming the first problem. */
export function parseTwoStageCheckpoint(raw: unknown): TwoStageCheckpoint {
  if (!isObj(raw)) throw new CheckpointFormatError('checkpoint is not an object');
  const v = raw.schemaVersion;
  if (v !== TWO_STAGE_CHECKPOINT_VERSION) {
    throw new CheckpointFormatError(`unsupported checkpoint schemaVersion ${JSON.stringify(v)} (this build reads ${TWO_STAGE_CHECKPOINT_VERSION})`);
  }
  if (!isInt(raw.phaseIndex)) throw new CheckpointFormatError('phaseIndex must be a non-negative integer');
  if (!isInt(raw.cycleIndex)) throw new CheckpointFormatError('cycleIndex must be a non-negative integer');
  if (!Array.isArray(raw.baseMessages) || !raw.baseMessages.every(isMessage)) throw new CheckpointFormatError('baseMessages must be chat messages');
  if (!Array.isArray(raw.injected) || !raw.injected.every(isMessage)) throw new CheckpointFormatError('injected must be chat messages');
  if (
    !Array.isArray(raw.executed) ||
    !raw.executed.every((e) => isObj(e) && typeof e.signature === 'string' && typeof e.name === 'string' && isInt(e.phaseIndex))
  ) {
    throw new CheckpointFormatError('executed must list {signature, name, phaseIndex}');
  }
  if (!isInt(raw.duplicateStrikes)) throw new CheckpointFormatError('duplicateStrikes must be a non-negative integer');
  if (!Array.isArray(raw.toldInvalid) || !raw.toldInvalid.every((s) => typeof s === 'string')) throw new CheckpointFormatError('toldInvalid must be strings');
  const u = isObj(raw.usage) ? raw.usage : {};
  return {
    schemaVersion: v,
    phaseIndex: raw.phaseIndex,
    cycleIndex: raw.cycleIndex,
    baseMessages: raw.baseMessages,
    injected: raw.injected,
    executed: raw.executed as TwoStageCheckpoint['executed'],
    duplicateStrikes: raw.duplicateStrikes,
    ...(raw.lastStrike === 'repeat' || raw.lastStrike === 'no_progress' || raw.lastStrike === 'invalid' ? { lastStrike: raw.lastStrike } : {}),
    toldInvalid: raw.toldInvalid as string[],
    usage: {
      promptTokens: Number(u.promptTokens) || 0,
      completionTokens: Number(u.completionTokens) || 0,
      totalTokens: Number(u.totalTokens) || 0,
      llmCalls: Number(u.llmCalls) || 0,
      ...(Number(u.largestPromptTokens) > 0 ? { largestPromptTokens: Number(u.largestPromptTokens) } : {}),
    },
    ...(parsePromptGauge(raw.promptGauge) ? { promptGauge: parsePromptGauge(raw.promptGauge) } : {}),
    ...(isSourcesSnapshot(raw.sources) ? { sources: raw.sources } : {}),
    ...(raw.pendingApproval !== undefined ? { pendingApproval: parsePending(raw.pendingApproval) } : {}),
    ...(raw.runningCall !== undefined ? { runningCall: parseRunning(raw.runningCall) } : {}),
  };
}

function parseRunning(v: unknown): RunningCall {
  const call = isObj(v) ? v.call : undefined;
  if (
    !isObj(v) ||
    !isObj(call) ||
    typeof call.id !== 'string' ||
    typeof call.name !== 'string' ||
    typeof call.arguments !== 'string' ||
    (v.signature !== null && typeof v.signature !== 'string')
  ) {
    throw new CheckpointFormatError('runningCall must be {call: {id, name, arguments}, signature}');
  }
  return {
    call: { id: call.id, name: call.name, arguments: call.arguments },
    signature: v.signature as string | null,
    ...(v.masked === true && { masked: true }),
    ...(v.approved === true && { approved: true }),
  };
}

function parsePending(v: unknown): PendingApproval {
  const call = isObj(v) ? v.call : undefined;
  if (
    !isObj(v) ||
    typeof v.approvalId !== 'string' ||
    !isObj(call) ||
    typeof call.id !== 'string' ||
    typeof call.name !== 'string' ||
    typeof call.arguments !== 'string' ||
    (v.signature !== null && typeof v.signature !== 'string')
  ) {
    throw new CheckpointFormatError('pendingApproval must be {approvalId, call: {id, name, arguments}, signature}');
  }
  return { approvalId: v.approvalId, call: { id: call.id, name: call.name, arguments: call.arguments }, signature: v.signature as string | null };
}

/** A malformed snapshot is dropped, not fatal: it only feeds the `sources` event. */
export function isSourcesSnapshot(v: unknown): v is SourcesSnapshot {
  return (
    isObj(v) &&
    Array.isArray(v.data) &&
    v.data.every(isObj) &&
    Array.isArray(v.confidences) &&
    v.confidences.every((c) => typeof c === 'string') &&
    isInt(v.ragCalls) &&
    (v.metrics === undefined || isObj(v.metrics))
  );
}
