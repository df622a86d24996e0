import { Injectable } from '@nestjs/common';

/** Why a run's signal fired; cancellation is an outcome, never an error. */
export class RunAbortedError extends Error {
  constructor(readonly reason: 'cancelled' | 'client_disconnected' | 'shutdown') {
    super(`run ${reason}`);
    this.name = 'AbortError';
  }
}

interface LiveRun {
  abort: AbortController;
  pause: boolean;
}

/**
 * The runs this instance is executing: one AbortController per run (cancel, client
 * disconnect and shutdown abort it) and a pause flag asked at natural pause points.
 * Requests that arrive at another instance reach this one through the database (issue #7).
 */
@Injectable()
export class RunControlService {
  private readonly live = new Map<string, LiveRun>();

  attach(requestId: string): LiveRun {
    const run: LiveRun = { abort: new AbortController(), pause: false };
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
    return true;
  }

  pauseRequested(requestId: string): boolean {
    return this.live.get(requestId)?.pause ?? false;
  }

  /** Aborts every live run (shutdown). */
  abortAll(): void {
    for (const id of this.live.keys()) this.cancelLocal(id, 'shutdown');
  }
}
