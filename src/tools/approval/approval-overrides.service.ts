import { Injectable, Logger, Optional, type OnModuleInit } from '@nestjs/common';
import { DbNotifierService } from '../../database/db-notifier.service';
import type { ProjectApprovalOverride } from './approval-policy';
import { ApprovalOverrideRepository, type ApprovalOverrideRow } from './repositories/approval-override.repository';

/** NOTIFY channel: the payload is the project whose override changed. */
export const APPROVAL_OVERRIDE_CHANNEL = 'orion_tool_approval_override';

/**
 * Kept for at most this long without a NOTIFY. The NOTIFY is what makes a change reach every
 * instance at once; the TTL only bounds how long an instance whose LISTEN connection was down
 * (reconnecting) when the change was made keeps the old override.
 */
export const APPROVAL_OVERRIDE_TTL_MS = 30_000;

interface Cached {
  value: ApprovalOverrideRow | null;
  at: number;
}

/**
 * The per-project approval overrides (docs/API.md "Approval policy"). The runner reads a project's
 * override for every call that asks about approval, so it is cached in memory per project: a
 * change made on any instance is NOTIFYed and drops the entry everywhere; the TTL is the fallback
 * for a missed NOTIFY. A read that raced with a NOTIFY is not cached (the generation moved).
 */
@Injectable()
export class ApprovalOverridesService implements OnModuleInit {
  private readonly logger = new Logger('ApprovalOverrides');
  private readonly cache = new Map<string, Cached>();
  private readonly loading = new Map<string, Promise<ApprovalOverrideRow | null>>();
  private generation = 0;
  /** the clock; tests of the TTL set their own */
  now: () => number = Date.now;

  constructor(
    private readonly repo: ApprovalOverrideRepository,
    @Optional() private readonly notifier?: DbNotifierService,
  ) {}

  async onModuleInit(): Promise<void> {
    await this.notifier?.listen(APPROVAL_OVERRIDE_CHANNEL, (projectId) => this.drop(projectId));
  }

  /** The project's override as stored (null: none), from the cache when fresh. */
  async get(projectId: string): Promise<ApprovalOverrideRow | null> {
    const hit = this.cache.get(projectId);
    if (hit && this.now() - hit.at < APPROVAL_OVERRIDE_TTL_MS) return hit.value;
    let pending = this.loading.get(projectId);
    if (!pending) {
      pending = this.load(projectId, hit).finally(() => this.loading.delete(projectId));
      this.loading.set(projectId, pending);
    }
    return pending;
  }

  /** What the policy reads: the lists only. */
  async overrideOf(projectId: string): Promise<ProjectApprovalOverride | null> {
    const row = await this.get(projectId);
    return row ? { require: row.require, exempt: row.exempt } : null;
  }

  /** Replaces the project's override and tells every instance (this one at once). */
  async set(projectId: string, require: string[], exempt: string[], updatedBy: string | null): Promise<ApprovalOverrideRow> {
    const row = await this.repo.upsert(projectId, require, exempt, updatedBy);
    this.drop(projectId);
    this.cache.set(projectId, { value: row, at: this.now() });
    await this.notifier?.notify(APPROVAL_OVERRIDE_CHANNEL, projectId);
    return row;
  }

  private drop(projectId: string): void {
    this.generation++;
    this.cache.delete(projectId);
  }

  private async load(projectId: string, stale: Cached | undefined): Promise<ApprovalOverrideRow | null> {
    const generation = this.generation;
    try {
      const value = await this.repo.find(projectId);
      if (generation === this.generation) this.cache.set(projectId, { value, at: this.now() });
      return value;
    } catch (err) {
      // the database did not answer: the last known override beats none (which could let a
      // required call run unasked); with nothing known, the call fails rather than guess
      if (stale) {
        this.logger.warn(`reading the approval override of ${projectId} failed (${(err as Error).message}); using the one read before`);
        return stale.value;
      }
      throw err;
    }
  }
}
