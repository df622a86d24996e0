import { Injectable, Logger, type BeforeApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { Observable, type Subscription } from 'rxjs';
import type { EntityManager } from 'typeorm';
import type { MultitaskStrategy } from '../config/env.schema';
import { AppConfigService } from '../config/app-config.service';
import { DbNotifierService } from '../database/db-notifier.service';
import type { SentEvent } from '../runs/run-event-bus.service';
import { INSTANCE_ID } from '../runs/run-executor.service';
import { RunRepository } from '../runs/repositories/run.repository';
import { RunsService } from '../runs/runs.service';
import { ChatException, ChatExceptionCode } from './chat.exception';
import { CONVERSATION_TURNS_CHANNEL, ConversationTurnRepository, type QueuedTurn, type QueuedTurnSpec } from './repositories/conversation-turn.repository';

/** A queued turn retries its start at least this often, in case a wake-up (NOTIFY) was missed. */
const POLL_MS = 1000;

/** A message for an existing conversation, before it is decided. */
export interface TurnRequest {
  requestId: string;
  conversationId: string;
  projectId: string;
  content: string;
  /** default CONVERSATION_MULTITASK */
  strategy?: MultitaskStrategy;
  turn: QueuedTurnSpec;
}

/** Opens the turn's run (its user message with it) in the transaction that decided it may start. */
export type OpenTurn<T> = (m: EntityManager) => Promise<T>;

export type Admission<T> = { started: T } | { queued: { position: number; activeRequestId: string } };

type Attempt<T> = { started: T } | { cancelled: true } | { waiting: { position: number; activeRequestId: string } } | { settling: true };

/**
 * One turn at a time per conversation (issue 33). A message for a conversation whose turn is
 * still active (its run `running`, `paused`, or waiting for a person) follows its strategy:
 * refused, queued, or queued first after cancelling the active turn. The database decides: every
 * decision is taken under the conversation's lock, so two messages at once on two instances get
 * one winner and one strategy outcome.
 *
 * A queued turn waits on the instance that accepted it: it tries to start when a run of its
 * conversation ends (the runs trigger NOTIFYs `orion_conversation_turns`, whatever closed the
 * run: the executor, the sweeper, a cancel of a paused run, on any instance), when a queued turn
 * is cancelled, and every second in case a notification was missed. It starts when nothing is
 * active and it is first in the queue; its history is read then, so it includes the earlier
 * answer. Its instance renews its place; the places of an instance that died lapse.
 */
@Injectable()
export class TurnGate implements OnModuleInit, BeforeApplicationShutdown {
  private readonly logger = new Logger('TurnGate');
  /** the queued turns waiting here, by conversation: each entry retries its start */
  private readonly waiting = new Map<string, Map<string, () => void>>();
  /** stops every wait on shutdown (their turns leave the queue) */
  private readonly stops = new Map<string, () => void>();
  private unlisten: (() => void) | null = null;
  private renewTimer: NodeJS.Timeout | null = null;
  /** set on shutdown: no queued turn starts on an instance that is stopping */
  private closing = false;

  constructor(
    private readonly turns: ConversationTurnRepository,
    private readonly runRows: RunRepository,
    private readonly runs: RunsService,
    private readonly notifier: DbNotifierService,
    private readonly config: AppConfigService,
  ) {}

  async onModuleInit(): Promise<void> {
    this.unlisten = await this.notifier.listen(CONVERSATION_TURNS_CHANNEL, (conversationId) => {
      for (const retry of this.waiting.get(conversationId)?.values() ?? []) retry();
    });
    // a queued turn's place lapses unless its instance renews it, as a run's lease does
    const leaseMs = this.config.get('RUN_LEASE_MS');
    this.renewTimer = setInterval(() => {
      const ids = [...this.waiting.values()].flatMap((m) => [...m.keys()]);
      this.turns.renew(ids, leaseMs).catch((err: unknown) => this.logger.warn(`could not renew queued turns: ${(err as Error).message}`));
    }, Math.max(250, Math.floor(leaseMs / 3)));
    this.renewTimer.unref();
  }

  /** On shutdown the turns queued here leave their queues: this instance will not start them. */
  async beforeApplicationShutdown(): Promise<void> {
    this.closing = true;
    this.unlisten?.();
    if (this.renewTimer) clearInterval(this.renewTimer);
    await Promise.allSettled([...this.stops.keys()].map((id) => this.turns.cancel(id)));
    for (const stop of [...this.stops.values()]) stop();
  }

  /**
   * Decides a message for an existing conversation: `open` runs (the turn starts now) when no
   * turn is active or queued; otherwise the strategy applies. `reject` throws 409
   * conversation_busy naming the active turn; the others queue the turn (`interrupt` and
   * `rollback` ahead of `enqueue`d ones, after cancelling the active turn).
   */
  async admit<T>(request: TurnRequest, open: OpenTurn<T>): Promise<Admission<T>> {
    const r = { ...request, strategy: request.strategy ?? this.config.get('CONVERSATION_MULTITASK') };
    const leaseMs = this.config.get('RUN_LEASE_MS');
    const decided = await this.turns.underLock(r.conversationId, async (m) => {
      const active = await this.runRows.activeInConversation(m, r.conversationId);
      const queue = await this.turns.queue(m, r.conversationId);
      if (!active && queue.length === 0) return { started: await open(m) };
      const busyWith = active?.requestId ?? queue[0].requestId;
      if (r.strategy === 'reject') {
        throw new ChatException(ChatExceptionCode.CONVERSATION_BUSY, `Conversation ${r.conversationId} has an active turn (${busyWith}); nothing was stored. Send with options.multitask enqueue, interrupt or rollback, or cancel that turn`, {
          requestId: busyWith,
        });
      }
      const turn: QueuedTurn = { ...r, strategy: r.strategy, displaces: r.strategy === 'enqueue' ? null : (active?.requestId ?? null) };
      await this.turns.insert(m, turn, INSTANCE_ID, leaseMs);
      const ahead = r.strategy === 'enqueue' ? queue.length : queue.filter((q) => q.strategy !== 'enqueue').length;
      return { queued: { position: ahead + 1, activeRequestId: busyWith }, displaces: turn.displaces };
    });
    if ('started' in decided) return decided;
    // the displaced turn is cancelled as a Stop would (its partial answer is stored); this turn
    // starts when its run has ended
    if (decided.displaces) await this.runs.cancel(decided.displaces).catch((err: unknown) => this.logger.debug(`displaced turn ${decided.displaces}: ${(err as Error).message}`));
    return { queued: decided.queued };
  }

  /**
   * The stream of a queued turn: `queued {position, activeRequestId}` (again when either
   * changes), then, when the turn starts, the stream `begin` returns for it. A turn cancelled
   * while queued ends with `done {stopReason: "cancelled"}`. A client that leaves takes its turn
   * out of the queue, unless the message was detached: then the turn still runs, without a client.
   * Neither `queued` nor that `done` is stored (no run exists yet): both carry seq 0.
   */
  queuedStream<T>(
    r: TurnRequest & { detach: boolean },
    first: { position: number; activeRequestId: string },
    open: OpenTurn<T>,
    begin: (opened: T, clientGone: AbortSignal) => Promise<Observable<SentEvent>>,
    clientGone: AbortSignal,
  ): Observable<SentEvent> {
    const envelope = { requestId: r.requestId, projectId: r.projectId, conversationId: r.conversationId, seq: 0, phase: 'action_phase', phaseIndex: 0, cycleIndex: 0 };
    let last = '';
    let subscriber: { next(e: SentEvent): void } | null = null;
    const tell = (q: { position: number; activeRequestId: string }) => {
      const key = `${q.position}:${q.activeRequestId}`;
      if (key === last) return;
      last = key;
      subscriber?.next({ seq: 0, type: 'queued', data: { ...envelope, position: q.position, activeRequestId: q.activeRequestId } });
    };
    // the wait runs whether or not anyone reads the stream: a detached turn starts without a client
    const started = this.wait(r, open, tell);
    const leave = () => {
      if (!r.detach) void this.turns.cancel(r.requestId).catch((err: unknown) => this.logger.warn(`could not dequeue ${r.requestId}: ${(err as Error).message}`));
    };
    clientGone.addEventListener('abort', leave, { once: true });
    const begun = started.then(async (opened) => {
      clientGone.removeEventListener('abort', leave);
      if (opened === null) return null;
      // a client that left before the turn started is gone from its start: the run engine then
      // cancels it at once, unless detached (a signal that aborted earlier would not be heard)
      const gone = new AbortController();
      clientGone.addEventListener('abort', () => gone.abort(), { once: true });
      const events = await begin(opened, gone.signal);
      if (clientGone.aborted) gone.abort();
      return events;
    });
    begun.catch((err: unknown) => this.logger.error(`queued turn ${r.requestId} could not start: ${(err as Error).message}`));
    return new Observable<SentEvent>((sub) => {
      subscriber = sub;
      last = '';
      tell(first);
      let inner: Subscription | null = null;
      let closed = false;
      begun.then(
        (events) => {
          if (closed) return;
          if (!events) {
            sub.next({ seq: 0, type: 'done', data: { ...envelope, phase: 'complete', fullContent: '', messageId: null, stopReason: 'cancelled', usage: { promptTokens: 0, completionTokens: 0, totalTokens: 0, llmCalls: 0 } } });
            return sub.complete();
          }
          subscriber = null;
          inner = events.subscribe(sub);
        },
        (err: unknown) => sub.error(err),
      );
      return () => {
        closed = true;
        subscriber = null;
        inner?.unsubscribe();
      };
    });
  }

  /**
   * Waits until the queued turn may start, then opens it (`open`, under the conversation's lock)
   * and resolves with what `open` returned; null when it left the queue first (cancelled, or its
   * place lapsed). `onQueued` hears its place whenever it is checked.
   */
  private wait<T>(r: TurnRequest, open: OpenTurn<T>, onQueued: (q: { position: number; activeRequestId: string }) => void): Promise<T | null> {
    return new Promise<T | null>((resolve) => {
      let busy = false;
      let again = false;
      let done = false;
      const finish = (v: T | null) => {
        if (done) return;
        done = true;
        clearInterval(timer);
        this.waiting.get(r.conversationId)?.delete(r.requestId);
        if (this.waiting.get(r.conversationId)?.size === 0) this.waiting.delete(r.conversationId);
        this.stops.delete(r.requestId);
        resolve(v);
      };
      const retry = () => {
        if (done) return;
        if (busy) {
          again = true;
          return;
        }
        busy = true;
        this.attempt(r, open)
          .then((a) => {
            if ('started' in a) finish(a.started);
            else if ('cancelled' in a) finish(null);
            else if ('waiting' in a) onQueued(a.waiting);
          })
          .catch((err: unknown) => this.logger.warn(`queued turn ${r.requestId}: could not check its place (${(err as Error).message}); retrying`))
          .finally(() => {
            busy = false;
            if (again) {
              again = false;
              retry();
            }
          });
      };
      const timer = setInterval(retry, POLL_MS);
      timer.unref();
      let here = this.waiting.get(r.conversationId);
      if (!here) this.waiting.set(r.conversationId, (here = new Map()));
      here.set(r.requestId, retry);
      this.stops.set(r.requestId, () => finish(null));
      retry();
    });
  }

  /** One look at the queue, under the conversation's lock: start now, still waiting, or gone. */
  private attempt<T>(r: TurnRequest, open: OpenTurn<T>): Promise<Attempt<T>> {
    return this.turns.underLock(r.conversationId, async (m): Promise<Attempt<T>> => {
      const queue = await this.turns.queue(m, r.conversationId);
      const place = queue.findIndex((q) => q.requestId === r.requestId);
      if (place < 0 || this.closing) return { cancelled: true };
      const active = await this.runRows.activeInConversation(m, r.conversationId);
      if (active || place > 0) return { waiting: { position: place + 1, activeRequestId: active?.requestId ?? queue[0].requestId } };
      // the turn that ended may be storing its answer still (a paused run cancelled, a run the
      // sweeper closed): this turn's history must include it
      if (await this.turns.answerPending(m, r.conversationId)) return { settling: true };
      const me = queue[0];
      await this.turns.remove(m, me.requestId);
      if (me.displaces && me.strategy === 'interrupt') await this.turns.markInterrupted(m, me.displaces, me.requestId);
      if (me.displaces && me.strategy === 'rollback') await this.turns.markRolledBack(m, me.displaces, me.requestId);
      return { started: await open(m) };
    });
  }
}
