import { SplitSecretGuard } from '../common/util/split-secret-guard';
import { BeforeApplicationShutdown, Inject, Injectable, Logger, OnApplicationShutdown, Optional } from '@nestjs/common';
import { SecretRegistry } from '../common/secrets/secret-registry';
import { assertUnreachable } from '../common/util/assert-unreachable.util';
import { emptyUsage, type ProtocolEvent, type StopReason } from '../orchestration/protocol-event';
import { TRACE_SINK, type TraceSink } from '../trace/trace-sink.port';
import { AppConfigService } from '../config/app-config.service';
import { ANSWER_STORE, type AnswerStatus, type AnswerStore } from './answer-store.port';
import type { RunStatus } from './entities/run.entity';
import { LeaseLostError } from './repositories/run-event.repository';
import { RunEventWriter } from './run-event-writer.service';
import { RunRepository } from './repositories/run.repository';
import { RunControlService } from './run-control.service';
import { RunEventBus, type SentEvent } from './run-event-bus.service';
import { RunEventsService } from './run-events.service';
import { RunStream, type EndEvent, type RunEventStore } from './run-stream';
import type { ExecuteRunParams } from './run-params';
import { storageSafe, stripNul } from '../common/util/text-safety.util';
import { redactString } from '../common/util/redact.util';
import { TurnStepsRecorder } from './turn-steps';
import { forkOf, RunFailures, type Leg } from './run-failures';
import { INSTANCE_ID, keepLease } from './run-lease';
import type { TurnStep } from './answer-store.port';
import { ApprovalsService } from './approvals/approvals.service';
import { RunHandover } from './run-handover';

export { INSTANCE_ID } from './run-lease';

/** Version of the checkpoint format stored on runs (see run-state/run-checkpoint.ts). */
export const CHECKPOINT_SCHEMA_VERSION = 1;

export type { ExecuteRunParams, RunClient } from './run-params';

/** How a run is going, as its parts learn it: how it ended, whether its lease was lost, what its client got. */
interface RunState {
  ended: 'done' | 'paused' | null;
  leaseLost: boolean;
  /** the last seq this run's client was handed: after a lost lease it is sent what was stored after it */
  clientSeq: number;
}

/**
 * Drives a protocol generator into a run: numbers, stores and streams its events, saves
 * checkpoints, and ends the run exactly once — assistant message stored (unique per
 * requestId), `done` carrying its id, run row closed, trace written. A generator that throws,
 * a database that fails mid-stream, a client that disconnects all still end in one `done`
 * (or `paused`) with nothing already accepted lost.
 */
@Injectable()
export class RunExecutorService implements BeforeApplicationShutdown, OnApplicationShutdown {
  private readonly logger = new Logger('RunExecutor');
  private readonly inFlight = new Set<Promise<unknown>>();
  private readonly secrets: SecretRegistry;
  private readonly failures: RunFailures;
  private shuttingDown = false;
  /** stops the waits of streams that lost their lease (sendStoredEnd) on shutdown */
  private readonly closing = new AbortController();

  constructor(
    @Inject(ANSWER_STORE) private readonly conversations: AnswerStore,
    private readonly runs: RunRepository,
    private readonly writer: RunEventWriter,
    private readonly bus: RunEventBus,
    storedEvents: RunEventsService,
    private readonly control: RunControlService,
    private readonly config: AppConfigService,
    @Inject(TRACE_SINK) private readonly trace: TraceSink,
    @Optional() secrets?: SecretRegistry,
    // absent only where no run asks for approvals (the service benchmark builds the executor by hand)
    @Optional() private readonly approvals?: ApprovalsService,
    // absent where the executor is built by hand (the service benchmark): nothing is handed over on shutdown
    @Optional() private readonly handover?: RunHandover,
  ) {
    this.secrets = secrets ?? SecretRegistry.fromConfig(config);
    const leaseMs = () => config.get('RUN_LEASE_MS');
    this.failures = new RunFailures({ conversations, runs, storedEvents, leaseMs, closing: this.closing.signal, logger: this.logger });
  }

  /** Runs the turn to its end; resolves when the run is closed (or paused), with how it ended. */
  execute(p: ExecuteRunParams): Promise<'done' | 'paused' | null> {
    const job = this.run(p).finally(() => this.inFlight.delete(job));
    this.inFlight.add(job);
    return job;
  }

  private async run(p: ExecuteRunParams): Promise<'done' | 'paused' | null> {
    this.executing.set(p.requestId, p.turn.protocol.capabilities.resume === true);
    const live = this.control.attach(p.requestId);
    // nobody watches from the start: like a disconnect, this cancels unless detached
    if (!p.client && !p.detach) this.control.cancelLocal(p.requestId, 'client_disconnected');
    const stopLease = keepLease(this.runs, this.control, p.requestId, this.config.get('RUN_LEASE_MS'));
    const state: RunState = { ended: null, leaseLost: false, clientSeq: p.lastSeq };
    const stream = this.openStream(p, state);
    const leg: Leg = { content: p.priorContent, steps: new TurnStepsRecorder(p.priorSteps, p.priorContent.length) };
    try {
      await this.drive(p, stream, leg, live.abort.signal, state);
    } catch (err) {
      await this.failed(p, stream, leg, err, live.abort.signal, state);
    } finally {
      // counted before the run leaves `executing`, so a drain never sees neither
      const forward = state.leaseLost && p.client !== null;
      if (forward) this.forwarding++;
      this.executing.delete(p.requestId);
      this.handover?.forget(p.requestId);
      stopLease();
      this.waiting.delete(p.requestId);
      this.resumable.delete(p.requestId);
      this.checkpointAt.delete(p.requestId);
      await stream.flush().catch(() => undefined);
      this.control.release(p.requestId);
      this.bus.end(p.requestId);
      void this.trace.flush();
      if (forward) await this.failures.sendStoredEnd(p, p.client!, state.clientSeq, stream).finally(() => this.forwarding--);
    }
    return state.ended;
  }

  /**
   * the runs whose turn executes here (not counting the wait of one that lost its lease for the
   * end stored elsewhere), each with whether its protocol continues from a checkpoint elsewhere
   */
  private readonly executing = new Map<string, boolean>();

  /** Whether another instance could continue this run from a checkpoint (a drain hands over only those). */
  continuesElsewhere(requestId: string): boolean {
    return this.executing.get(requestId) === true;
  }

  /** Runs whose turn is executing here and does not wait for a person (a drain waits for these, RunDrainService). */
  get busy(): string[] {
    return [...this.executing.keys()].filter((id) => !this.waiting.has(id));
  }

  /** clients of runs that lost their lease (or were handed over) being sent what the other instance stores */
  private forwarding = 0;

  /** Whether a client here is still being sent the events another instance stores for a run that left (a drain waits for it). */
  get forwardingClients(): boolean {
    return this.forwarding > 0;
  }

  /** the approvals each run executing here still waits for (a unified step can ask for several) */
  private readonly waiting = new Map<string, Set<string>>();
  /** the runs of `waiting` whose protocol continues from a checkpoint: on shutdown another instance takes them over */
  private readonly resumable = new Set<string>();
  /** the phase of each executing run's latest stored checkpoint (or of the one it continues from) */
  private readonly checkpointAt = new Map<string, number>();

  /** The run's stream: its events stored under this instance's lease, then sent to its client (if any) and the bus. */
  private openStream(p: ExecuteRunParams, state: RunState): RunStream {
    const sinks: Array<(e: SentEvent[]) => Promise<void> | void> = [(e) => this.bus.publish(p.requestId, e)];
    const { client } = p;
    if (client) {
      sinks.unshift((e) => {
        if (e.length) state.clientSeq = e[e.length - 1].seq;
        return client.deliver(e);
      });
    }
    // stored under this instance's lease, grouped with the other runs' events of the moment
    // a run handed over on shutdown stores nothing more here, before its lease is even released
    const fenced: RunEventStore = {
      enqueue: (batch) => (this.handover?.fenced(batch.requestId) ? Promise.reject(new LeaseLostError(batch.requestId)) : this.writer.enqueue(batch, INSTANCE_ID)),
      insertMany: (id, rows, closing) => (this.handover?.fenced(id) ? Promise.reject(new LeaseLostError(id)) : this.writer.append(id, INSTANCE_ID, rows, closing)),
    };
    return new RunStream(p, fenced, sinks, { lastSeq: p.lastSeq, state: p.envelope });
  }

  /** Sends the opening events, then every event of the protocol, until it ends. */
  private async drive(p: ExecuteRunParams, stream: RunStream, leg: Leg, signal: AbortSignal, state: RunState): Promise<void> {
    const protocol = p.turn.protocol;
    const base = p.turn.context(signal, { pauseRequested: () => this.control.pauseRequested(p.requestId) });
    // calls that need a person wait for a decision through the run engine (any instance decides)
    const ctx = p.approvals && this.approvals ? { ...base, approvals: this.approvals.port(p.requestId, p.approvals.setting) } : base;
    if (base.resumeFrom) this.checkpointAt.set(p.requestId, base.resumeFrom.phaseIndex);
    for (const ev of p.opening) await stream.emit(ev);
    // a secret split across two chunks is masked too: the end of a chunk that may start one waits
    const split = new SplitSecretGuard(this.secrets.values());
    for await (const ev of protocol.execute(ctx)) {
      if (state.ended) {
        this.logger.error(`${protocol.name} yielded ${ev.type} after ${state.ended}; ignored (run ${p.requestId})`);
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
    this.logger.error(`${protocol.name} ended without done; closing run ${p.requestId}`);
    await this.finishWithError(p, stream, leg, { code: 'protocol_error', message: 'The protocol ended without an answer' }, signal);
    state.ended = 'done';
  }

  /** An event other than a chunk, after the text the split-secret guard held back. */
  private async dispatch(p: ExecuteRunParams, stream: RunStream, ev: Exclude<ProtocolEvent, { type: 'chunk' }>, leg: Leg, split: SplitSecretGuard): Promise<'done' | 'paused' | null> {
    const wait = this.chunk(stream, split.flush(), leg);
    if (wait) await wait;
    if (stream.error) throw stream.error;
    return this.handle(p, stream, ev, leg);
  }

  /** The run threw: another instance took it over, or it is closed here with an error. */
  private async failed(p: ExecuteRunParams, stream: RunStream, leg: Leg, err: unknown, signal: AbortSignal, state: RunState): Promise<void> {
    if (err instanceof LeaseLostError || stream.error instanceof LeaseLostError) {
      // another instance closed this run: whatever it stored is what clients see
      this.logger.warn(`run ${p.requestId}: lease lost; the turn stopped, its client gets the end the other instance stores`);
      this.control.cancelLocal(p.requestId, 'lease_lost');
      state.leaseLost = true;
      state.ended = 'done';
      return;
    }
    if (state.ended) return;
    const storage = stream.error !== null;
    this.logger.error(`run ${p.requestId} failed: ${(err as Error)?.stack ?? String(err)}`);
    const error = storage
      ? { code: 'storage_error', message: 'Could not store the run events; the turn was stopped' }
      : { code: 'internal_error', message: 'Internal error while running the turn' };
    await this.finishWithError(p, stream, leg, error, signal).catch((e) => {
      // the run was taken over while it was being closed here (its `done` was fenced)
      if (e instanceof LeaseLostError) state.leaseLost = true;
      else this.logger.error(`could not close run ${p.requestId}: ${(e as Error).message}`);
    });
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

  /** Handles one protocol event other than a chunk; returns how the stream ended, if it did. */
  private async handle(p: ExecuteRunParams, stream: RunStream, raw: Exclude<ProtocolEvent, { type: 'chunk' }>, leg: Leg): Promise<'done' | 'paused' | null> {
    // the one place run events are made safe: NUL cannot be stored, secrets must not be
    // streamed; what is stored (and appended to the answer, and kept as a step) is what is sent
    const ev = raw.type === 'checkpoint' ? raw : storageSafe(raw, this.secrets.values());
    switch (ev.type) {
      case 'checkpoint':
        // what a resume from this checkpoint continues after is stored first (events held between phases)
        await stream.flush();
        if (stream.error) throw stream.error;
        if (!(await this.runs.saveCheckpoint(p.requestId, CHECKPOINT_SCHEMA_VERSION, ev.phaseIndex, ev.state, INSTANCE_ID))) throw new LeaseLostError(p.requestId);
        this.checkpointAt.set(p.requestId, ev.phaseIndex);
        // draining: the run stops at this checkpoint, and another instance continues from it (not
        // at one stored as a call starts: the taker would take the call for cut off)
        if (!ev.midCall && (await this.handover?.atCheckpoint(p.requestId))) throw new LeaseLostError(p.requestId);
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
        this.trace.record({ requestId: p.requestId, projectId: p.projectId, type: 'run_paused', details: { resumeFromPhaseIndex: ev.resumeFromPhaseIndex, lastSeq: stream.lastSeq + 1 } });
        await this.trace.flush();
        await stream.close(ev, { status: 'paused', stopReason: null });
        if (stream.error) throw stream.error;
        return 'paused';
      case 'done':
        await this.finish(p, stream, { ...ev, fullContent: leg.content }, leg.steps.steps());
        return 'done';
      case 'approval_required':
        return this.approvalRequired(p, stream, ev, leg);
      case 'approval_decided':
        leg.steps.apply(ev.type, ev);
        return this.approvalDecided(p, stream, ev);
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

  /**
   * A call waits for a person: the approval is stored (once: asked again after a takeover, it
   * was sent already), the run is marked `awaiting_approval`, and the event, with its expiry, is
   * traced, stored and sent.
   */
  private async approvalRequired(p: ExecuteRunParams, stream: RunStream, ev: Extract<ProtocolEvent, { type: 'approval_required' }>, leg: Leg): Promise<null> {
    const timeoutMs = p.approvals?.timeoutMs ?? this.config.get('APPROVAL_TIMEOUT_MS');
    const { fresh, expiresAt } = await this.approvals!.open({ requestId: p.requestId, projectId: p.projectId }, ev, timeoutMs);
    leg.steps.apply(ev.type, { ...ev, expiresAt, phaseIndex: stream.envelope.phaseIndex });
    if (!(await this.runs.setAwaiting(p.requestId, INSTANCE_ID, true))) throw new LeaseLostError(p.requestId);
    this.control.setAwaiting(p.requestId, true);
    const waiting = this.waiting.get(p.requestId) ?? new Set<string>();
    waiting.add(ev.approvalId);
    this.waiting.set(p.requestId, waiting);
    // continued elsewhere only from a checkpoint of the phase it waits in (two-stage's): a unified
    // step's other calls ran after its last checkpoint, so such a run is cancelled on shutdown
    if (p.turn.protocol.capabilities.resume && this.checkpointAt.get(p.requestId) === stream.envelope.phaseIndex) this.resumable.add(p.requestId);
    // asked before (a takeover): nothing is sent, and the run now waits, so what is held goes now
    if (!fresh) {
      await stream.flush();
      return null;
    }
    this.trace.record({
      requestId: p.requestId,
      projectId: p.projectId,
      type: 'approval_requested',
      details: { approvalId: ev.approvalId, tool: ev.tool, callId: ev.callId, reason: ev.reason, expiresAt },
    });
    await stream.emit({ ...ev, expiresAt });
    return null;
  }

  /** The decision arrived: the run is `running` again, and the decision traced, stored and sent. */
  private async approvalDecided(p: ExecuteRunParams, stream: RunStream, ev: Extract<ProtocolEvent, { type: 'approval_decided' }>): Promise<null> {
    // a unified step may wait for several calls at once: the run waits until the last is decided
    const waiting = this.waiting.get(p.requestId);
    waiting?.delete(ev.approvalId);
    if (!waiting?.size) {
      this.waiting.delete(p.requestId);
      this.resumable.delete(p.requestId);
      this.checkpointAt.delete(p.requestId);
      if (!(await this.runs.setAwaiting(p.requestId, INSTANCE_ID, false))) throw new LeaseLostError(p.requestId);
      this.control.setAwaiting(p.requestId, false);
    }
    this.trace.record({
      requestId: p.requestId,
      projectId: p.projectId,
      type: 'approval_decided',
      details: { approvalId: ev.approvalId, decision: ev.decision, keyId: ev.by, edited: ev.edited, waitMs: await this.approvals!.waitedMs(ev.approvalId), ...(ev.reason ? { reason: ev.reason } : {}) },
    });
    await stream.emit(ev);
    return null;
  }

  /** Stores the assistant message once, then sends `done` with its id and closes the run. */
  private async finish(p: ExecuteRunParams, stream: RunStream, turnDone: Extract<ProtocolEvent, { type: 'done' }>, steps: TurnStep[]): Promise<void> {
    // the cost goes wherever the usage goes: done, the stored answer, the trace, the webhook
    const done = { ...turnDone, usage: p.turn.priced?.(turnDone.usage) ?? turnDone.usage };
    const status: AnswerStatus = done.stopReason === 'cancelled' ? 'cancelled' : done.stopReason === 'error' ? 'error' : 'complete';
    const runStatus: Exclude<RunStatus, 'running' | 'awaiting_approval' | 'paused'> = done.stopReason === 'cancelled' ? 'cancelled' : done.stopReason === 'error' ? 'failed' : 'completed';
    // held events (the turn's sources, a last error) are stored by the closing statement, with `done`
    await stream.settle();
    if (stream.error) throw stream.error;
    // handed over on shutdown: the answer is the taker's to store
    if (this.handover?.fenced(p.requestId)) throw new LeaseLostError(p.requestId);
    const { message } = await this.conversations.insertAssistantOnce(p.conversationId, p.requestId, done.fullContent, status, {
      stopReason: done.stopReason,
      protocol: p.turn.protocol.name,
      model: p.turn.model,
      usage: done.usage,
      steps,
      ...forkOf(p),
    });
    const type = runStatus === 'completed' ? 'run_completed' : runStatus === 'cancelled' ? 'run_cancelled' : 'run_failed';
    this.trace.record({
      requestId: p.requestId,
      projectId: p.projectId,
      type,
      details: { stopReason: done.stopReason, messageId: message.id, lastSeq: stream.lastSeq + 1, usage: done.usage },
    });
    // the turn's whole trace is stored before `done` goes out (GET /api/trace right after `done`
    // shows every tool call), and the run is closed in the same statement that stores `done`.
    // On shutdown the writer's own shutdown flush stores it (before the database closes); awaiting
    // here then holds the response past the HTTP server's close (a 5 s keep-alive wait).
    if (!this.shuttingDown) await this.trace.flush();
    await stream.close({ ...done, messageId: message.id } as EndEvent, { status: runStatus, stopReason: done.stopReason, announce: { answer: done.fullContent, usage: { ...done.usage } } });
    if (stream.error) throw stream.error;
  }

  /**
   * Last resort when the generator threw or the database failed: tell the client why (directly
   * when the event store is what failed), store what was streamed, close the run.
   */
  private async finishWithError(p: ExecuteRunParams, stream: RunStream, leg: Leg, error: { code: string; message: string }, signal: AbortSignal): Promise<void> {
    const stopReason: StopReason = signal.aborted ? 'cancelled' : 'error';
    if (stream.error) return this.failures.storageFailed(p, stream, leg, error, stopReason);
    if (stopReason === 'error') {
      leg.steps.apply('error', error);
      await stream.emit({ type: 'error', ...error, retryable: false });
    }
    await this.finish(p, stream, { type: 'done', fullContent: leg.content, stopReason, usage: emptyUsage() }, leg.steps.steps());
  }

  /**
   * Shutdown: live runs are cancelled (answer stored, stream closed with done{cancelled})
   * BEFORE the HTTP server waits for open connections, which would otherwise wait for every
   * streaming turn to finish; detached runs that another instance should finish are not kept
   * alive past a SIGTERM either. A run waiting for a person that can continue from its
   * checkpoint is handed over instead: its lease is released, it stops here storing nothing, and
   * another instance's sweeper takes it over with its approval still pending.
   */
  async beforeApplicationShutdown(): Promise<void> {
    this.shuttingDown = true;
    this.closing.abort();
    const handedOver = await this.handOverWaiting();
    this.control.abortAll(handedOver);
    await Promise.allSettled([...this.inFlight]);
  }

  /** Releases the leases of the runs waiting here for a person that another instance can take over. */
  private async handOverWaiting(): Promise<Set<string>> {
    const handed = new Set<string>();
    if (!this.approvals) return handed;
    for (const requestId of this.resumable) {
      if (!this.waiting.has(requestId)) continue;
      // one that was decided meanwhile (no longer awaiting) is not released, and is cancelled as any live run
      if (!(await this.runs.releaseLease(requestId, INSTANCE_ID, 'awaiting_approval').catch(() => false))) continue;
      this.approvals.handOff(requestId);
      handed.add(requestId);
      this.logger.warn(`run ${requestId} waits for a person: handed over to another instance on shutdown`);
    }
    return handed;
  }

  async onApplicationShutdown(): Promise<void> {
    await Promise.allSettled([...this.inFlight]);
  }
}
