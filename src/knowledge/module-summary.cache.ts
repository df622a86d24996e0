import { Injectable, OnModuleInit } from '@nestjs/common';
import { DbNotifierService } from '../database/db-notifier.service';
import type { ModuleSummaryRow } from './repositories/knowledge.repository';

/** Every instance drops a project's entry when this names it (an ingest changed its modules). */
export const KNOWLEDGE_CHANGED_CHANNEL = 'orion_knowledge_changed';
/** Longest an entry is used: writes made outside Orion (psql, a restore) show up within this. */
export const MODULES_TTL_MS = 10_000;
/** Entries kept before expired ones are swept (one per project in use). */
const SWEEP_ABOVE = 1_000;

interface Entry {
  at: number;
  rows: Promise<ModuleSummaryRow[]>;
}

/**
 * The modules of each project, as the unified route's system prompt lists them, kept in memory.
 * The summary is an aggregate over every chunk of the project and was computed again for every
 * turn: one statement per turn whose cost grows with the knowledge base, the same answer each
 * time. Concurrent turns of a project share one load. An ingest on any instance drops its
 * project's entry everywhere (`changed`, NOTIFY on KNOWLEDGE_CHANGED_CHANNEL); an entry is used
 * at most MODULES_TTL_MS.
 */
@Injectable()
export class ModuleSummaryCache implements OnModuleInit {
  private readonly entries = new Map<string, Entry>();

  constructor(private readonly notifier: DbNotifierService) {}

  async onModuleInit(): Promise<void> {
    await this.notifier.listen(KNOWLEDGE_CHANGED_CHANNEL, (projectId) => this.entries.delete(projectId));
  }

  get(projectId: string, load: () => Promise<ModuleSummaryRow[]>): Promise<ModuleSummaryRow[]> {
    const now = Date.now();
    const hit = this.entries.get(projectId);
    if (hit && now - hit.at < MODULES_TTL_MS) return hit.rows;
    if (this.entries.size >= SWEEP_ABOVE) this.sweep(now);
    // the entry is in place before the load runs, so a change announced while it runs drops it
    const entry: Entry = { at: now, rows: load() };
    this.entries.set(projectId, entry);
    // a failed load is not kept: the next turn asks the database again
    entry.rows.catch(() => this.entries.get(projectId) === entry && this.entries.delete(projectId));
    return entry.rows;
  }

  /** Called after a write to the project's knowledge (committed): every instance loads it again. */
  async changed(projectId: string): Promise<void> {
    this.entries.delete(projectId);
    await this.notifier.notify(KNOWLEDGE_CHANGED_CHANNEL, projectId); // best effort: the TTL bounds a lost one
  }

  private sweep(now: number): void {
    for (const [projectId, e] of this.entries) if (now - e.at >= MODULES_TTL_MS) this.entries.delete(projectId);
  }
}
