import { BeforeApplicationShutdown, Inject, Injectable, Logger, OnApplicationShutdown, Optional } from '@nestjs/common';
import { SecretRegistry } from '../common/secrets/secret-registry';
import { TRACE_SINK, type TraceSink } from '../trace/trace-sink.port';
import { AppConfigService } from '../config/app-config.service';
import { ANSWER_STORE, type AnswerStore } from './answer-store.port';
import { LeaseLostError } from './repositories/run-event.repository';
import { RunEventWriter } from './run-event-writer.service';
import { RunRepository } from './repositories/run.repository';
import { RunControlService } from './run-control.service';
import { RunEventBus, type SentEvent } from './run-event-bus.service';
import { RunEventsService } from './run-events.service';
import { RunStream, type RunEventStore } from './run-stream';
import type { ExecuteRunParams } from './run-params';
import { TurnStepsRecorder } from './turn-steps';
import { RunFailures, type Leg } from './run-failures';
import { INSTANCE_ID, keepLease } from './run-lease';
import { ApprovalsService } from './approvals/approvals.service';
import { RunHandover } from './run-handover';
import { ExecutingRuns } from './executing-runs';
import { RunEnding, type RunState } from './run-ending';
import { RunApprovalSteps } from './run-approval-steps';
import { RunDriver } from './run-driver';

export { INSTANCE_ID } from './run-lease';
export { CHECKPOINT_SCHEMA_VERSION } from './run-driver';
export type { ExecuteRunParams, RunClient } from './run-params';

/**
 * Runs turns on this instance: each one's lease kept, its stream opened, its protocol driven
 * (RunDriver) and its end made certain (RunEnding) — one `done` (or `paused`) with nothing
 * already accepted lost, whether the generator throws, the database fails mid-stream or the
 * client disconnects. Knows which runs execute here (ExecutingRuns) for a drain, and on
 * shutdown cancels them or hands over those that wait for a person.
 */
@Injectable()
export class RunExecutorService implements BeforeApplicationShutdown, OnApplicationShutdown {
  private readonly logger = new Logger('RunExecutor');
  private readonly inFlight = new Set<Promise<unknown>>();
  private readonly executing = new ExecutingRuns();
  private readonly failures: RunFailures;
  private readonly ending: RunEnding;
  private readonly driver: RunDriver;
  private shuttingDown = false;
  /** stops the waits of streams that lost their lease (sendStoredEnd) on shutdown */
  private readonly closing = new AbortController();

  constructor(
    @Inject(ANSWER_STORE) conversations: AnswerStore,
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
    const logger = this.logger;
    const executing = this.executing;
    const leaseMs = () => config.get('RUN_LEASE_MS');
    this.failures = new RunFailures({ conversations, runs, storedEvents, leaseMs, closing: this.closing.signal, logger });
    this.ending = new RunEnding({ conversations, control, trace, failures: this.failures, handover, shuttingDown: () => this.shuttingDown, logger });
    const approvalSteps = new RunApprovalSteps({ approvals, runs, control, executing, trace, timeoutMs: () => config.get('APPROVAL_TIMEOUT_MS') });
    this.driver = new RunDriver({ secrets: secrets ?? SecretRegistry.fromConfig(config), runs, control, executing, trace, ending: this.ending, approvalSteps, approvals, handover, logger });
  }

  /** Runs the turn to its end; resolves when the run is closed (or paused), with how it ended. */
  execute(p: ExecuteRunParams): Promise<'done' | 'paused' | null> {
    const job = this.run(p).finally(() => this.inFlight.delete(job));
    this.inFlight.add(job);
    return job;
  }

  private async run(p: ExecuteRunParams): Promise<'done' | 'paused' | null> {
    this.executing.started(p.requestId, p.turn.protocol.capabilities.resume === true);
    const live = this.control.attach(p.requestId);
    // nobody watches from the start: like a disconnect, this cancels unless detached
    if (!p.client && !p.detach) this.control.cancelLocal(p.requestId, 'client_disconnected');
    const stopLease = keepLease(this.runs, this.control, p.requestId, this.config.get('RUN_LEASE_MS'));
    const state: RunState = { ended: null, leaseLost: false, clientSeq: p.lastSeq };
    const stream = this.openStream(p, state);
    const leg: Leg = { content: p.priorContent, steps: new TurnStepsRecorder(p.priorSteps, p.priorContent.length) };
    try {
      await this.driver.drive(p, stream, leg, live.abort.signal, state);
    } catch (err) {
      await this.ending.failed(p, stream, leg, err, live.abort.signal, state);
    } finally {
      // counted before the run leaves `executing`, so a drain never sees neither
      const forward = state.leaseLost && p.client !== null;
      if (forward) this.executing.forwardingStarted();
      this.executing.left(p.requestId);
      this.handover?.forget(p.requestId);
      stopLease();
      await stream.flush().catch(() => undefined);
      this.control.release(p.requestId);
      this.bus.end(p.requestId);
      void this.trace.flush();
      if (forward) await this.failures.sendStoredEnd(p, p.client!, state.clientSeq, stream).finally(() => this.executing.forwardingEnded());
    }
    return state.ended;
  }

  /** Whether another instance could continue this run from a checkpoint (a drain hands over only those). */
  continuesElsewhere(requestId: string): boolean {
    return this.executing.continuesElsewhere(requestId);
  }

  /** Runs whose turn is executing here and does not wait for a person (a drain waits for these, RunDrainService). */
  get busy(): string[] {
    return this.executing.busy;
  }

  /** Whether a client here is still being sent the events another instance stores for a run that left (a drain waits for it). */
  get forwardingClients(): boolean {
    return this.executing.forwardingClients;
  }

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
    for (const requestId of this.executing.waitingResumable()) {
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
