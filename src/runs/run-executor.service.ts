import { SplitSecretGuard } from '../common/util/split-secret-guard';
import { BeforeApplicationShutdown, Inject, Injectable, Logger, OnApplicationShutdown, Optional } from '@nestjs/common';
import { SecretRegistry } from '../common/secrets/secret-registry';
import { hostname } from 'node:os';
import { randomUUID } from 'node:crypto';
import { assertUnreachable } from '../common/util/assert-unreachable.util';
import { emptyUsage, type ProtocolEvent, type StopReason } from '../orchestration/protocol-event';
import type { Turn } from '../orchestration/turn';
import { TRACE_SINK, type TraceSink } from '../trace/trace-sink.port';
import { AppConfigService } from '../config/app-config.service';
import { ANSWER_STORE, type AnswerMetadata, type AnswerStatus, type AnswerStore } from './answer-store.port';
import type { RunStatus } from './entities/run.entity';
import { LeaseLostError, type RunClosing } from './repositories/run-event.repository';
import { RunEventWriter } from './run-event-writer.service';
import { RunRepository } from './repositories/run.repository';
import { RunControlService } from './run-control.service';
import { RunEventBus, type SentEvent } from './run-event-bus.service';
import { RunEventsService } from './run-events.service';
import { RunStream, type EndEvent, type EnvelopeState, type WireEvent } from './run-stream';
import { storageSafe, stripNul } from '../common/util/text-safety.util';
import { redactString } from '../common/util/redact.util';
import { TurnStepsRecorder } from './turn-steps';
import type { TurnStep } from './answer-store.port';

/** Version of the checkpoint format stored on runs (see run-state/run-checkpoint.ts). */
export const CHECKPOINT_SCHEMA_VERSION = 1;

/** Who watches a run as it happens: gets its events in order, and can slow it down. */
export interface RunClient {
  /** resolves once the client can take more (a slow client slows the run, not memory) */
  deliver(events: SentEvent[]): Promise<void>;
  /** fires when the client has gone (nothing more need be read for it) */
  gone?: AbortSignal;
}

export interface ExecuteRunParams {
  requestId: string;
  projectId: string;
  conversationId: string;
  /** the protocol and its context, built by orchestration */
  turn: Turn;
  /** null: nobody watches (the client left before the run started) */
  client: RunClient | null;
  detach: boolean;
  /** first event(s) of this stream (`start`) */
  opening: WireEvent[];
  /** seq already used by this run (resume) */
  lastSeq: number;
  envelope?: EnvelopeState;
  /** text streamed by earlier legs of the run (resume), part of the stored answer */
  priorContent: string;
  /** steps of earlier legs of the run (resume), stored with the answer */
  priorSteps?: TurnStep[];
  /** a fork: the run and checkpoint it continues from (kept with the answer) */
  fork?: { parentRequestId: string; fromPhaseIndex: number };
}

/** What one leg of a run accumulates for its assistant message. */
interface Leg {
  content: string;
  readonly steps: TurnStepsRecorder;
}

/** An identity for this process in leases: host, pid, a random suffix. */
export const INSTANCE_ID = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;

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
  private shuttingDown = false;
  /** stops the waits of streams that lost their lease (sendStoredEnd) on shutdown */
  private readonly closing = new AbortController();

  constructor(
    @Inject(ANSWER_STORE) private readonly conversations: AnswerStore,
    private readonly runs: RunRepository,
    private readonly writer: RunEventWriter,
    private readonly bus: RunEventBus,
    private readonly storedEvents: RunEventsService,
    private readonly control: RunControlService,
    private readonly config: AppConfigService,
    @Inject(TRACE_SINK) private readonly trace: TraceSink,
    @Optional() secrets?: SecretRegistry,
  ) {
    this.secrets = secrets ?? SecretRegistry.fromConfig(config);
  }

  /** Runs the turn to its end; resolves when the run is closed (or paused), with how it ended. */
  execute(p: ExecuteRunParams): Promise<'done' | 'paused' | null> {
    const job = this.run(p).finally(() => this.inFlight.delete(job));
    this.inFlight.add(job);
    return job;
  }

  private async run(p: ExecuteRunParams): Promise<'done' | 'paused' | null> {
    const live = this.control.attach(p.requestId);
    const { client } = p;
    // nobody watches from the start: like a disconnect, this cancels unless detached
    if (!client && !p.detach) this.control.cancelLocal(p.requestId, 'client_disconnected');
    const leaseMs = this.config.get('RUN_LEASE_MS');
    // an instance that lost its lease (frozen past it, then swept) stops the turn; its writes
    // are fenced anyway, so it cannot store or send anything more
    const renew = async () => {
      const held = await this.runs.renewLease(p.requestId, INSTANCE_ID, leaseMs).catch(() => ({ control: null }));
      if (!held) this.control.cancelLocal(p.requestId, 'lease_lost');
      // the stored flag, for a control request whose NOTIFY this instance missed
      else if (held.control === 'cancel') this.control.cancelLocal(p.requestId, 'cancelled');
      else if (held.control === 'pause') this.control.pauseLocal(p.requestId);
    };
    const lease = setInterval(() => void renew(), Math.max(500, leaseMs / 3));
    lease.unref?.();

    const sinks: Array<(e: SentEvent[]) => Promise<void> | void> = [(e) => this.bus.publish(p.requestId, e)];
    // the last seq this run's client was handed: after a lost lease it is sent what was stored after it
    let clientSeq = p.lastSeq;
    if (client)
      sinks.unshift((e) => {
        if (e.length) clientSeq = e[e.length - 1].seq;
        return client.deliver(e);
      });
    // stored under this instance's lease, grouped with the other runs' events of the moment
    const fenced = { insertMany: (id: string, rows: SentEvent[], closing?: RunClosing) => this.writer.append(id, INSTANCE_ID, rows, closing) };
    const stream = new RunStream(p, fenced, sinks, { lastSeq: p.lastSeq, state: p.envelope });

    const leg: Leg = { content: p.priorContent, steps: new TurnStepsRecorder(p.priorSteps) };
    let ended: 'done' | 'paused' | null = null;
    let leaseLost = false;
    const protocol = p.turn.protocol;
    const ctx = p.turn.context(live.abort.signal, { pauseRequested: () => this.control.pauseRequested(p.requestId) });

    try {
      for (const ev of p.opening) await stream.emit(ev);
      // a secret split across two chunks is masked too: the end of a chunk that may start one waits
      const split = new SplitSecretGuard(this.secrets.values());
      for await (const ev of protocol.execute(ctx)) {
        if (ended) {
          this.logger.error(`${protocol.name} yielded ${ev.type} after ${ended}; ignored (run ${p.requestId})`);
          continue;
        }
        if (ev.type === 'chunk') {
          // nearly every event of a turn: handled here, with no event copied and no await
          // unless a full batch is pending behind the one being stored or sent (backpressure)
          const safe = split.push(ev.content);
          if (!safe) continue;
          const wait = this.chunk(stream, safe, leg);
          if (wait) await wait;
        } else {
          const held = split.flush();
          if (held) {
            const wait = this.chunk(stream, held, leg);
            if (wait) await wait;
          }
          if (stream.error) throw stream.error;
          ended = await this.handle(p, stream, ev, leg);
        }
        if (stream.error) throw stream.error;
      }
      if (!ended) {
        this.logger.error(`${protocol.name} ended without done; closing run ${p.requestId}`);
        await this.finishWithError(p, stream, leg, 'protocol_error', 'The protocol ended without an answer', live.abort.signal);
        ended = 'done';
      }
    } catch (err) {
      if (err instanceof LeaseLostError || stream.error instanceof LeaseLostError) {
        // another instance closed this run: whatever it stored is what clients see
        this.logger.warn(`run ${p.requestId}: lease lost; the turn stopped, its client gets the end the other instance stores`);
        this.control.cancelLocal(p.requestId, 'lease_lost');
        leaseLost = true;
        ended = 'done';
      } else if (!ended) {
        const storage = stream.error !== null;
        this.logger.error(`run ${p.requestId} failed: ${(err as Error)?.stack ?? String(err)}`);
        await this.finishWithError(
          p,
          stream,
          leg,
          storage ? 'storage_error' : 'internal_error',
          storage ? 'Could not store the run events; the turn was stopped' : 'Internal error while running the turn',
          live.abort.signal,
        ).catch((e) => {
          // the run was taken over while it was being closed here (its `done` was fenced)
          if (e instanceof LeaseLostError) leaseLost = true;
          else this.logger.error(`could not close run ${p.requestId}: ${(e as Error).message}`);
        });
        ended = 'done';
      }
    } finally {
      clearInterval(lease);
      await stream.flush().catch(() => undefined);
      this.control.release(p.requestId);
      this.bus.end(p.requestId);
      void this.trace.flush();
      if (leaseLost && client) await this.sendStoredEnd(p, client, clientSeq, stream.envelope);
    }
    return ended;
  }

  /**
   * This instance lost the run's lease (it stalled past it and another instance closed the run):
   * its client is sent what was stored after the last event it got, read from run_events as the
   * reconnect route reads them (the other instance's `error instance_lost` and `done`, same seq,
   * same JSON), then the stream ends: the client gets its one `done`. They are waited for up to
   * RUN_LEASE_MS (that instance marks the run closed before it stores them); if they are not
   * stored by then (that instance failed too), the client gets `error lease_lost` at the next
   * seq instead, and the stream ends without `done`.
   */
  private async sendStoredEnd(p: ExecuteRunParams, client: RunClient, afterSeq: number, envelope: EnvelopeState): Promise<void> {
    const bound = this.config.get('RUN_LEASE_MS');
    const stop = AbortSignal.any([AbortSignal.timeout(bound), this.closing.signal, ...(client.gone ? [client.gone] : [])]);
    let last = afterSeq;
    let ended = false;
    try {
      for await (const e of this.storedEvents.untilEnd(p.requestId, afterSeq, stop)) {
        await client.deliver([e]);
        last = e.seq;
        if (e.type === 'done' || e.type === 'paused') ended = true;
      }
    } catch (err) {
      this.logger.error(`run ${p.requestId}: could not read the events stored after its lease was lost: ${(err as Error).message}`);
    }
    if (ended || client.gone?.aborted) return;
    this.logger.warn(`run ${p.requestId}: the end of the run was not stored within ${bound} ms of losing its lease; its client is told so`);
    const seq = last + 1;
    const message = 'This instance lost the run to another one, which has not stored how it ended; reconnect to the run\'s events route to read its end';
    await client.deliver([{ seq, type: 'error', data: { requestId: p.requestId, projectId: p.projectId, conversationId: p.conversationId, seq, ...envelope, code: 'lease_lost', message, retryable: true } }]);
  }

  /**
   * One chunk of answer text: made safe (NUL cannot be stored, secrets must not be streamed; a
   * chunk is one new string, made safe as such), appended to the answer, stored and sent.
   * Returns what the producer must wait for, if anything (RunStream.chunk).
   */
  private chunk(stream: RunStream, text: string, leg: Leg): Promise<void> | null {
    const content = redactString(stripNul(text), this.secrets.values());
    leg.content += content;
    return stream.chunk(content);
  }

  /** Handles one protocol event other than a chunk; returns how the stream ended, if it did. */
  private async handle(p: ExecuteRunParams, stream: RunStream, raw: Exclude<ProtocolEvent, { type: 'chunk' }>, leg: Leg): Promise<'done' | 'paused' | null> {
    // the one place run events are made safe: NUL cannot be stored, secrets must not be
    // streamed; what is stored (and appended to the answer, and kept as a step) is what is sent
    const ev = raw.type === 'checkpoint' ? raw : storageSafe(raw, this.secrets.values());
    switch (ev.type) {
      case 'checkpoint':
        if (!(await this.runs.saveCheckpoint(p.requestId, CHECKPOINT_SCHEMA_VERSION, ev.phaseIndex, ev.state, INSTANCE_ID))) throw new LeaseLostError(p.requestId);
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
      case 'tool_calls':
      case 'tool_progress':
      case 'tool_phase':
      case 'sources':
      case 'notice':
      case 'error':
        leg.steps.apply(ev.type, { ...ev, phaseIndex: stream.envelope.phaseIndex });
        await stream.emit(ev);
        return null;
      default:
        return assertUnreachable(ev, 'protocol event');
    }
  }

  /** Stores the assistant message once, then sends `done` with its id and closes the run. */
  private async finish(p: ExecuteRunParams, stream: RunStream, done: Extract<ProtocolEvent, { type: 'done' }>, steps: TurnStep[]): Promise<void> {
    const status: AnswerStatus = done.stopReason === 'cancelled' ? 'cancelled' : done.stopReason === 'error' ? 'error' : 'complete';
    const runStatus: Exclude<RunStatus, 'running' | 'paused'> = done.stopReason === 'cancelled' ? 'cancelled' : done.stopReason === 'error' ? 'failed' : 'completed';
    await stream.flush();
    if (stream.error) throw stream.error;
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
    await stream.close({ ...done, messageId: message.id } as EndEvent, { status: runStatus, stopReason: done.stopReason });
    if (stream.error) throw stream.error;
  }

  /**
   * Last resort when the generator threw or the database failed: tell the client why (directly
   * when the event store is what failed), store what was streamed, close the run.
   */
  private async finishWithError(
    p: ExecuteRunParams,
    stream: RunStream,
    leg: Leg,
    code: string,
    message: string,
    signal: AbortSignal,
  ): Promise<void> {
    const { content } = leg;
    const stopReason: StopReason = signal.aborted ? 'cancelled' : 'error';
    if (stream.error) {
      // the event store is down: the client still hears why, the message is stored if possible
      // numbered after what was stored and sent: the chunks queued past it never will be
      const seq = stream.lastSentSeq + 1;
      await p.client?.deliver([{ seq, type: 'error', data: { requestId: p.requestId, projectId: p.projectId, conversationId: p.conversationId, seq, phase: stream.envelope.phase, phaseIndex: stream.envelope.phaseIndex, cycleIndex: stream.envelope.cycleIndex, code, message, retryable: true } }]);
      let messageId: string | null = null;
      try {
        leg.steps.apply('error', { code, message });
        messageId = (await this.conversations.insertAssistantOnce(p.conversationId, p.requestId, content, 'error', { stopReason, error: code, model: p.turn.model, steps: leg.steps.steps(), ...forkOf(p) })).message.id;
        await this.runs.finish(p.requestId, 'failed', stopReason, stream.lastSentSeq);
      } catch (e) {
        this.logger.error(`run ${p.requestId}: could not store the answer: ${(e as Error).message}`);
      }
      await p.client?.deliver([{ seq: seq + 1, type: 'done', data: { requestId: p.requestId, projectId: p.projectId, conversationId: p.conversationId, seq: seq + 1, phase: 'complete', phaseIndex: stream.envelope.phaseIndex, cycleIndex: stream.envelope.cycleIndex, fullContent: content, messageId, stopReason, usage: emptyUsage() } }]);
      return;
    }
    if (stopReason === 'error') {
      leg.steps.apply('error', { code, message });
      await stream.emit({ type: 'error', code, message, retryable: false });
    }
    await this.finish(p, stream, { type: 'done', fullContent: content, stopReason, usage: emptyUsage() }, leg.steps.steps());
  }

  /**
   * Shutdown: live runs are cancelled (answer stored, stream closed with done{cancelled})
   * BEFORE the HTTP server waits for open connections, which would otherwise wait for every
   * streaming turn to finish; detached runs that another instance should finish are not kept
   * alive past a SIGTERM either.
   */
  async beforeApplicationShutdown(): Promise<void> {
    this.shuttingDown = true;
    this.closing.abort();
    this.control.abortAll();
    await Promise.allSettled([...this.inFlight]);
  }

  async onApplicationShutdown(): Promise<void> {
    await Promise.allSettled([...this.inFlight]);
  }
}

/** The answer metadata that links a fork's answer to its parent run. */
function forkOf(p: ExecuteRunParams): Pick<AnswerMetadata, 'forkOf'> {
  return p.fork ? { forkOf: { requestId: p.fork.parentRequestId, phaseIndex: p.fork.fromPhaseIndex } } : {};
}
