/**
 * Drives a protocol's events into a run's stream: each event made safe, appended to the
 * answer and its steps, then stored and sent; checkpoints saved; the end handed to RunEnding.
 * The hot path of a turn: a chunk goes from the protocol to the stream here, and nowhere else.
 */
import type { Logger } from '@nestjs/common';
import type { SecretRegistry } from '../common/secrets/secret-registry';
import { assertUnreachable } from '../common/util/assert-unreachable.util';
import { redactString } from '../common/util/redact.util';
import { SplitSecretGuard } from '../common/util/split-secret-guard';
import { storageSafe, stripNul } from '../common/util/text-safety.util';
import type { ProtocolEvent } from '../orchestration/protocol-event';
import type { TraceSink } from '../trace/trace-sink.port';
import type { ApprovalsService } from './approvals/approvals.service';
import type { ExecutingRuns } from './executing-runs';
import { LeaseLostError } from './repositories/run-event.repository';
import type { RunRepository } from './repositories/run.repository';
import type { RunApprovalSteps } from './run-approval-steps';
import type { RunControlService } from './run-control.service';
import type { RunEnding, RunState } from './run-ending';
import type { Leg } from './run-failures';
import type { RunHandover } from './run-handover';
import { INSTANCE_ID } from './run-lease';
import type { ExecuteRunParams } from './run-params';
import type { RunStream } from './run-stream';

/** Version of the checkpoint format stored on runs (see run-state/run-checkpoint.ts). */
export const CHECKPOINT_SCHEMA_VERSION = 1;

export interface RunDriverDeps {
  secrets: SecretRegistry;
  runs: RunRepository;
  control: RunControlService;
  executing: ExecutingRuns;
  trace: TraceSink;
  ending: RunEnding;
  approvalSteps: RunApprovalSteps;
  /** absent only where no run asks for approvals (the service benchmark builds the executor by hand) */
  approvals?: ApprovalsService;
  /** absent where nothing is handed over on shutdown */
  handover?: RunHandover;
  logger: Logger;
}

type Other = Exclude<ProtocolEvent, { type: 'chunk' }>;

export class RunDriver {
  /** read on every chunk: a field of its own rather than one of `deps` */
  private readonly secrets: SecretRegistry;

  constructor(private readonly deps: RunDriverDeps) {
    this.secrets = deps.secrets;
  }

  /** Sends the opening events, then every event of the protocol, until it ends. */
  async drive(p: ExecuteRunParams, stream: RunStream, leg: Leg, signal: AbortSignal, state: RunState): Promise<void> {
    const { control, approvals, logger } = this.deps;
    const protocol = p.turn.protocol;
    const base = p.turn.context(signal, { pauseRequested: () => control.pauseRequested(p.requestId) });
    // calls that need a person wait for a decision through the run engine (any instance decides)
    const ctx = p.approvals && approvals ? { ...base, approvals: approvals.port(p.requestId, p.approvals.setting) } : base;
    if (base.resumeFrom) this.deps.executing.checkpointed(p.requestId, base.resumeFrom.phaseIndex);
    for (const ev of p.opening) await stream.emit(ev);
    // a secret split across two chunks is masked too: the end of a chunk that may start one waits
    const split = new SplitSecretGuard(this.secrets.values());
    for await (const ev of protocol.execute(ctx)) {
      if (state.ended) {
        logger.error(`${protocol.name} yielded ${ev.type} after ${state.ended}; ignored (run ${p.requestId})`);
        continue;
      }
      if (ev.type === 'chunk') {
        // nearly every event of a turn: handled here, with no event copied and no await
        // unless a full batch is pending behind the one being stored or sent (backpressure)
        const wait = this.chunk(stream, split.push(ev.content), leg);
        if (wait) await wait;
      } else state.ended = await this.dispatch(p, stream, ev, leg, split);
      if (stream.error) throw stream.error;
    }
    if (state.ended) return;
    logger.error(`${protocol.name} ended without done; closing run ${p.requestId}`);
    await this.deps.ending.finishWithError(p, stream, leg, { code: 'protocol_error', message: 'The protocol ended without an answer' }, signal);
    state.ended = 'done';
  }

  /**
   * One chunk of answer text: made safe (NUL cannot be stored, secrets must not be streamed; a
   * chunk is one new string, made safe as such), appended to the answer, stored and sent.
   * Returns what the producer must wait for, if anything (RunStream.chunk).
   */
  private chunk(stream: RunStream, text: string, leg: Leg): Promise<void> | null {
    // nothing to send: the split-secret guard holds the whole piece, or holds nothing
    if (!text) return null;
    const content = redactString(stripNul(text), this.secrets.values());
    leg.content += content;
    leg.steps.apply('chunk', { content });
    return stream.chunk(content);
  }

  /** An event other than a chunk, after the text the split-secret guard held back. */
  private async dispatch(p: ExecuteRunParams, stream: RunStream, ev: Other, leg: Leg, split: SplitSecretGuard): Promise<'done' | 'paused' | null> {
    const wait = this.chunk(stream, split.flush(), leg);
    if (wait) await wait;
    if (stream.error) throw stream.error;
    return this.handle(p, stream, ev, leg);
  }

  /** Handles one protocol event other than a chunk; returns how the stream ended, if it did. */
  private async handle(p: ExecuteRunParams, stream: RunStream, raw: Other, leg: Leg): Promise<'done' | 'paused' | null> {
    // the one place run events are made safe: NUL cannot be stored, secrets must not be
    // streamed; what is stored (and appended to the answer, and kept as a step) is what is sent
    const ev = raw.type === 'checkpoint' ? raw : storageSafe(raw, this.secrets.values());
    switch (ev.type) {
      case 'checkpoint':
        // what a resume from this checkpoint continues after is stored first (events held between phases)
        await stream.flush();
        if (stream.error) throw stream.error;
        if (!(await this.deps.runs.saveCheckpoint(p.requestId, CHECKPOINT_SCHEMA_VERSION, ev.phaseIndex, ev.state, INSTANCE_ID))) throw new LeaseLostError(p.requestId);
        this.deps.executing.checkpointed(p.requestId, ev.phaseIndex);
        // draining: the run stops at this checkpoint, and another instance continues from it (not
        // at one stored as a call starts: the taker would take the call for cut off)
        if (!ev.midCall && (await this.deps.handover?.atCheckpoint(p.requestId))) throw new LeaseLostError(p.requestId);
        return null;
      case 'phase':
        leg.steps.apply(ev.type, ev);
        // stored with the run's progress (phase_index, cycle_index, last_seq) in one statement
        await stream.emit(ev);
        return null;
      case 'paused':
        await stream.flush();
        if (stream.error) throw stream.error;
        // the turn's trace is stored, and the run marked paused with its `paused` event, before that event is sent
        this.deps.trace.record({ requestId: p.requestId, projectId: p.projectId, type: 'run_paused', details: { resumeFromPhaseIndex: ev.resumeFromPhaseIndex, lastSeq: stream.lastSeq + 1 } });
        await this.deps.trace.flush();
        await stream.close(ev, { status: 'paused', stopReason: null });
        if (stream.error) throw stream.error;
        return 'paused';
      case 'done':
        await this.deps.ending.finish(p, stream, { ...ev, fullContent: leg.content }, leg.steps.steps());
        return 'done';
      case 'approval_required':
        return this.deps.approvalSteps.required(p, stream, ev, leg);
      case 'approval_decided':
        leg.steps.apply(ev.type, ev);
        return this.deps.approvalSteps.decided(p, stream, ev);
      case 'tool_calls':
      case 'tool_progress':
      case 'tool_phase':
      case 'sources':
      case 'notice':
      case 'error':
        leg.steps.apply(ev.type, { ...ev, phaseIndex: stream.envelope.phaseIndex });
        // between phases the next phase's start or the run's end follows at once: stored with it
        if (stream.betweenPhases) stream.hold(ev);
        else await stream.emit(ev);
        return null;
      default:
        return assertUnreachable(ev, 'protocol event');
    }
  }
}
