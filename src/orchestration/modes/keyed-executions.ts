import { Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { IdempotentSend } from '../../common/idempotency/idempotency-key';
import { keyInUse, keyReused } from '../../common/idempotency/idempotency.exception';
import { AppConfigService } from '../../config/app-config.service';
import { IdempotencyKeyStore } from '../../database/idempotency-key.store';
import { KeyedProgressStore, type StoredProgress } from '../../database/keyed-progress.store';
import { EXECUTION_TAKEN_OVER, type DecidedPlan, type ExecutionJournal, type ExecutionProgress, type ToolCallsResult, type ToolExecution } from './tool-calls-result';

/** A send whose key names an execution still under way waits this long for its result before answering 409. */
const WAIT_MS = 30_000;
const POLL_MS = 100;
/** this process, in the `owner` of the executions it runs (with a token per execution) */
const INSTANCE = `${hostname()}:${process.pid}`;

/** What a keyed execution runs with: the request it is (the first send's, when continued), its journal, its stop signal. */
export interface KeyedAttempt {
  requestId: string;
  journal: ExecutionJournal;
  /** aborted when the key is no longer this attempt's (a retry took it over): the calls stop */
  signal: AbortSignal;
}

/** A journal write refused: another attempt owns the key now. */
class KeyLostError extends Error {
  override readonly name = EXECUTION_TAKEN_OVER;
  constructor(key: string) {
    super(`Idempotency-Key ${key} was taken over by another instance`);
  }
}

/**
 * Tool-only executions named by an `Idempotency-Key` (docs/API.md, Idempotent sends): the first
 * send with the key runs, and its result is stored with the key; a later send with the same key
 * and body, on any instance, gets that result (waiting for it while the first still runs), never
 * a second execution; another body is a 422.
 *
 * While it runs, an execution stores its progress with its key (the decision, each finished
 * call, the call running) and renews a heartbeat every RUN_LEASE_MS / 3. A retry that finds the
 * heartbeat older than RUN_LEASE_MS (its instance died) takes the execution over and continues it
 * from there (decided-calls.ts): no second model call, no finished call run again.
 */
@Injectable()
export class KeyedExecutions {
  constructor(
    private readonly keys: IdempotencyKeyStore,
    private readonly progress: KeyedProgressStore,
    private readonly config: AppConfigService,
  ) {}

  async run(projectId: string, send: IdempotentSend, requestId: string, execute: (attempt: KeyedAttempt) => Promise<ToolCallsResult>): Promise<ToolCallsResult> {
    const owner = `${INSTANCE}/${randomUUID().slice(0, 8)}`;
    const windowMs = this.config.get('IDEMPOTENCY_WINDOW_MS');
    const leaseMs = this.config.get('RUN_LEASE_MS');
    const claim = { projectId, key: send.key, fingerprint: send.fingerprint, requestId, windowMs, owner };
    const deadline = Date.now() + WAIT_MS;
    let runAs = requestId;
    let resumed: ExecutionProgress | null = null;
    for (let held = await this.keys.claim(claim); held; held = (await this.keys.find(projectId, send.key)) ?? (await this.keys.claim(claim))) {
      if (held.fingerprint !== send.fingerprint) throw keyReused(send.key, held.requestId);
      if (held.result !== null && held.result !== undefined) return held.result as ToolCallsResult;
      if (held.idleMs >= leaseMs) {
        // its instance stopped renewing: exactly one retry gets it
        const taken = await this.progress.takeOver(projectId, send.key, held.requestId, owner, leaseMs, windowMs);
        if (taken) {
          runAs = taken.requestId;
          resumed = fromStored(taken.progress);
          break;
        }
        continue;
      }
      if (Date.now() >= deadline) throw keyInUse(send.key, held.requestId, 'is still executing');
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
    const journal = new KeyedJournal(this.progress, projectId, send.key, owner, resumed);
    const lost = new AbortController();
    const beat = setInterval(() => {
      this.progress.heartbeat(projectId, send.key, owner).then(
        (held) => held || lost.abort(new KeyLostError(send.key)),
        () => undefined, // the database is away: the next beat tries again
      );
    }, Math.max(100, Math.floor(leaseMs / 3)));
    beat.unref();
    let result: ToolCallsResult;
    try {
      result = await execute({ requestId: runAs, journal, signal: lost.signal });
    } catch (err) {
      if ((err as Error)?.name === EXECUTION_TAKEN_OVER) return this.takenOver(projectId, send.key, runAs);
      // nothing stored to continue: a retry may run it again; else a retry continues it after the lease
      if (!journal.stored) await this.progress.release(projectId, send.key, owner).catch(() => undefined);
      throw err;
    } finally {
      clearInterval(beat);
    }
    if (await this.progress.finish(projectId, send.key, owner, result)) return result;
    return this.takenOver(projectId, send.key, runAs);
  }

  /**
   * This attempt lost the key while it ran (it stalled past the lease and a retry took it over):
   * what it did is not the execution's result; the key's is, once the retry stored it.
   */
  private async takenOver(projectId: string, key: string, requestId: string): Promise<ToolCallsResult> {
    const now = await this.keys.find(projectId, key);
    if (now?.result !== null && now?.result !== undefined) return now.result as ToolCallsResult;
    throw keyInUse(key, now?.requestId ?? requestId, 'was taken over by another instance and is still executing');
  }
}

/** The progress a retry took over, as the orchestration reads it (null: the execution stored nothing yet). */
function fromStored(p: StoredProgress | null): ExecutionProgress {
  return { plan: (p?.plan ?? null) as DecidedPlan | null, executions: (p?.executions ?? []) as ToolExecution[], running: p?.running ?? null };
}

/** The journal of one attempt: each write is the whole progress, under the attempt's ownership. */
class KeyedJournal implements ExecutionJournal {
  private state: StoredProgress;
  /** whether a decision was stored: from then on the key is not released, a retry continues */
  stored = false;

  constructor(
    private readonly store: KeyedProgressStore,
    private readonly projectId: string,
    private readonly key: string,
    private readonly owner: string,
    readonly resumed: ExecutionProgress | null,
  ) {
    this.state = { plan: resumed?.plan ?? null, executions: resumed?.executions ?? [], running: null };
    this.stored = !!resumed?.plan;
  }

  async decided(plan: DecidedPlan): Promise<void> {
    await this.write({ plan, executions: [], running: null });
    this.stored = true;
  }

  starting(index: number): Promise<void> {
    return this.write({ ...this.state, running: index });
  }

  finished(executions: ToolExecution[]): Promise<void> {
    return this.write({ ...this.state, executions: [...executions], running: null });
  }

  private async write(next: StoredProgress): Promise<void> {
    if (!(await this.store.save(this.projectId, this.key, this.owner, next))) throw new KeyLostError(this.key);
    this.state = next;
  }
}
