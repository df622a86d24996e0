import type { PhaseName } from '../orchestration/protocol-event';
import type { LlmMessage } from '../llm/llm-adapter.port';
import type { TurnStep } from './answer-store.port';
import type { RunEntity } from './entities/run.entity';
import type { StoredRunEvent } from './repositories/run-event.repository';
import type { ExecuteRunParams } from './run-params';
import { RunsException, RunsExceptionCode } from './runs.exception';
import { liveEvents, supersedeFrom, textUpTo } from './fork-prefix';
import { TurnStepsRecorder } from './turn-steps';

/*
 * Where a resumed or forked run continues, and the refusals that list a run's checkpoints:
 * the parts of continuing from a checkpoint that need no database.
 */

/**
 * A run that may continue from the checkpoint of `phaseIndex` (checked, not yet claimed): in
 * place (`fork: false`, a paused run's latest checkpoint) or as a new run forked from it.
 */
export interface ResumePlan {
  run: RunEntity;
  phaseIndex: number;
  fork: boolean;
  /** the checkpoint as stored, and the conversation it continues */
  state: Record<string, unknown>;
  baseMessages: LlmMessage[];
  /** the checkpoint was stored as this call started (issue 44): a takeover continues that call */
  cutCallId?: string;
  /** the protocol goes on with calls started after this checkpoint (ProtocolStrategy.readCheckpoint) */
  answersStartedCalls?: boolean;
  /** the protocol stores a checkpoint as each call starts (ProtocolStrategy.readCheckpoint) */
  checkpointsEachCall?: boolean;
}

/** Where a claimed resume continues: seq, envelope and the text already streamed. */
export interface ResumePoint {
  lastSeq: number;
  envelope?: ExecuteRunParams['envelope'];
  priorContent: string;
  /** the stored steps of those legs, kept with the answer */
  priorSteps: TurnStep[];
  /**
   * a takeover of a run whose instance died mid-phase (issue 44): the seq from which the stored
   * events are the phase cut short, which its continuation's `start` supersedes
   */
  supersedesFromSeq?: number;
  /** a takeover: the calls (ids) started after the checkpoint, or whose approval was decided since, which may or may not have run */
  startedCalls?: string[];
}

/** Where a run continues after `events`: the last one's seq and envelope, the text up to the checkpoint. */
export function pointOf(events: StoredRunEvent[], phaseIndex: number): ResumePoint {
  const last = events.at(-1);
  return {
    lastSeq: last?.seq ?? 0,
    envelope: last ? { phase: last.data.phase as PhaseName, phaseIndex: Number(last.data.phaseIndex), cycleIndex: Number(last.data.cycleIndex) } : undefined,
    priorContent: textUpTo(events, phaseIndex),
    // the steps up to the checkpoint are kept with the answer, as their text is
    priorSteps: TurnStepsRecorder.fromStored(liveEvents(events), phaseIndex),
  };
}

/**
 * Where a run taken over continues after `events`: as `pointOf`, with where the phase its
 * instance was cut off in starts. From a checkpoint stored as call `cutCallId` started, the
 * continuation goes on in that tool phase: what the dead instance stored after the call's
 * `calling` is superseded instead (and not taken into the text and steps kept). `startedCalls`:
 * the calls started since the checkpoint, which a protocol that answers them itself (unified) reads.
 */
export function takeoverPointOf(events: StoredRunEvent[], phaseIndex: number, cutCallId?: string): ResumePoint {
  const calling = cutCallId === undefined ? undefined : liveEvents(events).find((e) => e.type === 'tool_progress' && e.data.action === 'calling' && e.data.callId === cutCallId);
  const from = calling ? liveEvents(events).find((e) => e.seq > calling.seq)?.seq : supersedeFrom(events, phaseIndex);
  const kept = from === undefined || !calling ? events : events.filter((e) => e.seq < from);
  const last = pointOf(events, phaseIndex);
  const started = [...new Set([...startedSince(events, phaseIndex).map((e) => String(e.data.callId)), ...decidedSince(events, phaseIndex)])];
  return {
    ...pointOf(kept, phaseIndex),
    lastSeq: last.lastSeq,
    envelope: last.envelope,
    ...(from !== undefined && { supersedesFromSeq: from }),
    ...(started.length > 0 && { startedCalls: started }),
  };
}

/** The `calling` events of calls started after the checkpoint of `phaseIndex` (live ones: a superseded phase was run again). */
function startedAfter(events: StoredRunEvent[], phaseIndex: number): StoredRunEvent[] {
  return liveEvents(events).filter((e) => e.type === 'tool_progress' && e.data.action === 'calling' && Number(e.data.phaseIndex) > phaseIndex);
}

/**
 * The calls (ids) whose approval the dead instance had decided in or after the phase of the
 * checkpoint (a stored `approval_decided`): an approved one may have run. A unified step that
 * waited for a person is checkpointed at the tool phase it waits in, so its calls' `calling`
 * events are not after it; the protocol tells these from the calls still waiting.
 */
function decidedSince(events: StoredRunEvent[], phaseIndex: number): string[] {
  const live = liveEvents(events);
  const decided = new Set(live.filter((e) => e.type === 'approval_decided' && Number(e.data.phaseIndex) >= phaseIndex).map((e) => String(e.data.approvalId)));
  return live.filter((e) => e.type === 'approval_required' && decided.has(String(e.data.approvalId))).map((e) => String(e.data.callId));
}

/**
 * As `startedAfter`, and also the calls of earlier legs continued from this same checkpoint that
 * were cut off in their turn: superseded, but each may have run, and a continuation from the
 * checkpoint before a step's calls answers the same calls again.
 */
function startedSince(events: StoredRunEvent[], phaseIndex: number): StoredRunEvent[] {
  const legs = events
    .filter((e) => e.type === 'start' && typeof e.data.supersedesFromSeq === 'number' && Number(e.data.resumeFromPhaseIndex) === phaseIndex)
    .map((e) => [Number(e.data.supersedesFromSeq), e.seq] as const);
  const live = new Set(startedAfter(events, phaseIndex));
  return events.filter(
    (e) => live.has(e) || (e.type === 'tool_progress' && e.data.action === 'calling' && Number(e.data.phaseIndex) > phaseIndex && legs.some(([from, until]) => e.seq >= from && e.seq < until)),
  );
}

/**
 * A call the dead instance had started after the checkpoint (issue 44): its result is not in the
 * checkpoint, so continuing from it would have the model ask for it again and run it a second
 * time. The run is closed instead (reason `tool_interrupted`); undefined when there is none.
 * Not for a run whose protocol stores a checkpoint as each call starts (`checkpointsEachCall`,
 * as its checkpoint reading says) when the run stored its start (phase 0): a build that stored
 * neither may have run a call after its latest checkpoint; this one never did (the model asks
 * for it again, and it runs once).
 */
export function interruptedCall(events: StoredRunEvent[], phaseIndex: number, run?: Pick<RunEntity, 'checkpoint'>, reading?: Pick<ResumePlan, 'checkpointsEachCall'>): string | undefined {
  if (run && reading?.checkpointsEachCall === true && checkpointsOf(run, true).includes(0)) return undefined;
  const call = startedAfter(events, phaseIndex)[0];
  return call ? String(call.data.tool) : undefined;
}

/**
 * The phase indexes of a run's stored checkpoints, in order: those a resume or fork may name.
 * `withStart`: also the turn's start (phase 0, issue 44), which only a takeover continues from.
 */
export function checkpointsOf(run: Pick<RunEntity, 'checkpoint'>, withStart = false): number[] {
  return Object.keys(run.checkpoint?.byPhase ?? {})
    .map(Number)
    .filter((n) => withStart || n > 0)
    .sort((a, b) => a - b);
}

/** 409 run_cancelled: a cancel is final; the run's checkpoints can still be forked. */
export function runCancelled(run: RunEntity): RunsException {
  const checkpoints = checkpointsOf(run);
  return new RunsException(RunsExceptionCode.RUN_CANCELLED, `Run ${run.requestId} was cancelled, and a cancelled run is never resumed${forkHint(run.requestId, checkpoints)}`, { checkpoints });
}

/** How a refused resume can still go on: the fork route, when the run has a checkpoint to fork from. */
export function forkHint(requestId: string, checkpoints: number[]): string {
  if (checkpoints.length === 0) return ' (it has no checkpoint to fork from either)';
  return `; to continue from one of its checkpoints (${checkpoints.join(', ')}) as a new run, fork it: POST /api/chat/runs/${requestId}/fork {"fromPhaseIndex": n}`;
}
