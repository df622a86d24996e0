import { Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { DbNotifierService } from '../database/db-notifier.service';

/** Why a run's signal fired; cancellation is an outcome, never an error. */
export class RunAbortedError extends Error {
  constructor(readonly reason: 'cancelled' | 'client_disconnected' | 'shutdown' | 'lease_lost') {
    super(`run ${reason}`);
    this.name = 'AbortError';
  }
}

interface LiveRun {
  abort: AbortController;
  pause: boolean;
  /** woken by a pause request (a run waiting for a person pauses at once, not at its next checkpoint) */
  onPause: Set<() => void>;
  /** waiting for a person's decision: a client that leaves does not cancel it */
  awaiting: boolean;
}

/** NOTIFY channel of cancel/pause requests; payload `{"requestId","control"}`. */
export const RUN_CONTROL_CHANNEL = 'orion_run_control';

/**
 * The runs this instance executes: one AbortController per run (cancel, client disconnect,
 * shutdown abort it) and a pause flag asked at natural pause points. A cancel or pause that
 * arrives at any instance is stored on the run row and announced with NOTIFY; the instance
 * running the run hears it here.
 */
@Injectable()
export class RunControlService implements OnModuleInit {
  private readonly logger = new Logger('RunControl');
  private readonly live = new Map<string, LiveRun>();

  constructor(private readonly notifier: DbNotifierService) {}

  async onModuleInit(): Promise<void> {
    await this.notifier.listen(RUN_CONTROL_CHANNEL, (payload) => {
      try {
        const { requestId, control } = JSON.parse(payload) as { requestId: string; control: 'cancel' | 'pause' };
        if (control === 'cancel') this.cancelLocal(requestId, 'cancelled');
        else if (control === 'pause') this.pauseLocal(requestId);
      } catch {
        this.logger.warn(`ignored a malformed control notification`);
      }
    });
  }

  /** Announces a control request to every instance (the one running the run acts on it). */
  async broadcast(requestId: string, control: 'cancel' | 'pause'): Promise<void> {
    await this.notifier.notify(RUN_CONTROL_CHANNEL, JSON.stringify({ requestId, control }));
  }

  attach(requestId: string): LiveRun {
    const run: LiveRun = { abort: new AbortController(), pause: false, onPause: new Set(), awaiting: false };
    this.live.set(requestId, run);
    return run;
  }

  release(requestId: string): void {
    this.live.delete(requestId);
  }

  isLive(requestId: string): boolean {
    return this.live.has(requestId);
  }

  /** Aborts a run running here; false when it does not run on this instance. */
  cancelLocal(requestId: string, reason: RunAbortedError['reason'] = 'cancelled'): boolean {
    const run = this.live.get(requestId);
    if (!run) return false;
    if (!run.abort.signal.aborted) run.abort.abort(new RunAbortedError(reason));
    return true;
  }

  pauseLocal(requestId: string): boolean {
    const run = this.live.get(requestId);
    if (!run) return false;
    run.pause = true;
    for (const wake of run.onPause) wake();
    return true;
  }

  /** Calls `fn` when a pause is requested for this run (at once when it already was); returns the unsubscribe. */
  whenPauseRequested(requestId: string, fn: () => void): () => void {
    const run = this.live.get(requestId);
    if (!run) return () => undefined;
    if (run.pause) {
      fn();
      return () => undefined;
    }
    run.onPause.add(fn);
    return () => run.onPause.delete(fn);
  }

  /** Marks the run as waiting for a person (or no longer). */
  setAwaiting(requestId: string, awaiting: boolean): void {
    const run = this.live.get(requestId);
    if (run) run.awaiting = awaiting;
  }

  /** Whether the run waits for a person here: its client may leave without cancelling it. */
  isAwaiting(requestId: string): boolean {
    return this.live.get(requestId)?.awaiting ?? false;
  }

  pauseRequested(requestId: string): boolean {
    return this.live.get(requestId)?.pause ?? false;
  }

  /** Aborts every live run (shutdown) but those in `except` (handed over to another instance). */
  abortAll(except: ReadonlySet<string> = new Set()): void {
    for (const id of this.live.keys()) if (!except.has(id)) this.cancelLocal(id, 'shutdown');
  }
}
