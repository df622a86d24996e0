import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown, Optional } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { AppConfigService } from '../config/app-config.service';
import { durationOrOff } from '../config/duration';
import { underMaintenanceLock } from '../database/maintenance-lock';
import { TIME_PARTITIONS, type TimePartitions } from '../database/time-partitions.port';
import { PendingVacuum, vacuumPartitions, vacuumTables } from '../database/vacuum';
import { compactRun, type CompactedRun } from '../runs/compaction';
import { keepRunEventSql, RunStorageRepository } from '../runs/repositories/run-storage.repository';
import { keepTraceSql, TraceEventRepository } from '../trace/repositories/trace-event.repository';
import { TRACE_SINK, type TraceSink } from '../trace/trace-sink.port';
import { StorageRetentionRepository } from './repositories/storage-retention.repository';
import { retentionBounds, runBatches, type RetentionBounds } from './storage-batches';

/** Batches one pass runs per kind at most; the next pass goes on. */
const MAX_BATCHES_PER_PASS = 500;

/** What one pass did: rows removed per table, runs compacted with their chunk events before and after. */
export interface StoragePass {
  removed: Record<string, number>;
  compacted: { runs: number; chunksBefore: number; chunksAfter: number; traceRecords: number };
  /** false when another instance held the lock (this pass did less or nothing) */
  complete: boolean;
  durationMs: number;
}

/**
 * The storage worker (issue 43; docs/OPERATIONS.md, Storage): one pass every
 * STORAGE_MAINTENANCE_MS moves rows between a run's ages, in bounded batches
 * (STORAGE_BATCH_SIZE), each a short transaction holding the maintenance advisory lock (so one
 * instance at a time works, and a batch never waits on a turn's rows: they are skipped when
 * locked). First compaction (RUN_COMPACT_AFTER), then retention of runs, trace records and
 * conversations (RETENTION_*, each project's own values over them). Live and paused runs are
 * never touched. Each pass that changed anything is traced (`storage_compacted`,
 * `storage_purged`), which is what /metrics counts.
 */
@Injectable()
export class StorageMaintenanceService implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('StorageMaintenance');
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<StoragePass> | null = null;
  private stopped = false;
  /** tables rows were deleted from since the last VACUUM (STORAGE_VACUUM_EVERY) */
  private readonly tablesToVacuum = new PendingVacuum((tables) => vacuumTables(this.ds, tables));
  /** the time partitions compaction deleted rows from since they were last vacuumed */
  private readonly partitionsToVacuum = new PendingVacuum((names) => vacuumPartitions(this.ds, names));

  constructor(
    @InjectDataSource() private readonly ds: DataSource,
    private readonly config: AppConfigService,
    private readonly runs: RunStorageRepository,
    private readonly trace: TraceEventRepository,
    private readonly retention: StorageRetentionRepository,
    @Inject(TRACE_SINK) private readonly sink: TraceSink,
    @Optional() @Inject(TIME_PARTITIONS) private readonly partitions?: TimePartitions,
  ) {}

  onApplicationBootstrap(): void {
    this.timer = setInterval(() => void this.runOnce().catch((err: unknown) => this.logger.warn(`storage pass failed: ${(err as Error).message}`)), this.config.get('STORAGE_MAINTENANCE_MS'));
    this.timer.unref?.();
  }

  onApplicationShutdown(): void {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
  }

  /** One pass now (a pass under way is joined, not doubled). */
  runOnce(): Promise<StoragePass> {
    this.running ??= this.pass().finally(() => (this.running = null));
    return this.running;
  }

  private async pass(): Promise<StoragePass> {
    const started = performance.now();
    const size = this.config.get('STORAGE_BATCH_SIZE');
    const opts = { maxBatches: MAX_BATCHES_PER_PASS, stopped: () => this.stopped };
    const removed: Record<string, number> = {};
    const add = (counts: Record<string, number>) => {
      for (const [table, n] of Object.entries(counts)) if (n > 0) removed[table] = (removed[table] ?? 0) + n;
    };
    const compacted = { runs: 0, chunksBefore: 0, chunksAfter: 0, traceRecords: 0 };
    // rows in time partitions are left to their partition's drop for two spans past retention:
    // the row deletes below are for what no drop removes (a partition kept for a held run's rows,
    // the default partition), not a race with the drop that empties each row at a time. Only
    // when partitions are short beside the retention (a quarter of it at most): with daily
    // partitions and an hour's retention, waiting for the drop would keep rows for days
    const span = this.partitions?.spanMs ?? 0;
    const graceFor = (b: RetentionBounds) => (span > 0 && span * 4 <= b.minMs ? 2 * span : 0);
    let complete = true;
    const note = (r: { end: string }) => {
      if (r.end === 'locked') complete = false;
    };

    const after = durationOrOff(this.config.get('RUN_COMPACT_AFTER'));
    if (after !== null) {
      note(
        await runBatches(
          () =>
            underMaintenanceLock(this.ds, async (m) => {
              const ids = await this.runs.claimToCompact(m, after, size);
              if (ids.length === 0) return 0;
              this.partitionsToVacuum.add(await this.runs.partitionsOf(m, ids));
              const compactedRuns = new Map<string, CompactedRun>();
              for (const [id, rows] of await this.runs.runRows(m, ids)) {
                const c = compactRun(rows);
                if (c) compactedRuns.set(id, c);
              }
              await this.runs.storeCompacted(m, compactedRuns, ids);
              // their trace records too: one row per run instead of one per record
              compacted.traceRecords += await this.trace.fold(m, ids);
              compacted.runs += ids.length;
              for (const c of compactedRuns.values()) {
                compacted.chunksBefore += c.chunksBefore;
                compacted.chunksAfter += c.chunksAfter;
              }
              return ids.length;
            }),
          size,
          opts,
        ),
      );
    }

    const projects = await this.retention.allProjectRetention();
    const runsBounds = retentionBounds(durationOrOff(this.config.get('RETENTION_RUNS') ?? null), projects.map((p) => p.runsMs));
    if (runsBounds && complete) {
      await this.dropPartitions('run_events', keepRunEventSql('$1', '$2'), runsBounds, add);
      note(
        await runBatches(
          () =>
            underMaintenanceLock(this.ds, async (m) => {
              const ids = await this.runs.claimExpired(m, runsBounds.deploymentMs, runsBounds.minMs, size, graceFor(runsBounds));
              add({ ...(await this.runs.deleteRuns(m, ids)) });
              return ids.length;
            }),
          size,
          opts,
        ),
      );
    }

    const traceBounds = retentionBounds(durationOrOff(this.config.get('RETENTION_TRACE') ?? null), projects.map((p) => p.traceMs));
    if (traceBounds && complete) {
      await this.dropPartitions('trace_events', keepTraceSql('$1', '$2'), traceBounds, add);
      note(
        await runBatches(
          () =>
            underMaintenanceLock(this.ds, async (m) => {
              const n = await this.trace.purgeExpired(m, traceBounds.deploymentMs, traceBounds.minMs, size, graceFor(traceBounds));
              add({ trace_events: n });
              return n;
            }),
          size,
          opts,
        ),
      );
    }

    const conversationBounds = retentionBounds(durationOrOff(this.config.get('RETENTION_CONVERSATIONS') ?? null), projects.map((p) => p.conversationsMs));
    if (conversationBounds && complete) {
      // a conversation holds many rows: a tenth of the batch (at least one) per transaction
      const perBatch = Math.max(1, Math.floor(size / 10));
      note(
        await runBatches(
          () =>
            underMaintenanceLock(this.ds, async (m) => {
              const ids = await this.retention.claimExpiredConversations(m, conversationBounds.deploymentMs, conversationBounds.minMs, perBatch, graceFor(conversationBounds));
              if (ids.length === 0) return 0;
              const runIds = await this.runs.runsOfConversations(m, ids);
              if (runIds.length > 0) add({ trace_events: await this.trace.deleteForRequests(m, runIds) });
              add({ ...(await this.runs.deleteRuns(m, runIds)) });
              add({ ...(await this.retention.deleteConversations(m, ids)) });
              return ids.length;
            }),
          perBatch,
          opts,
        ),
      );
    }

    await this.vacuum(Object.keys(removed));
    await this.vacuumCompacted();
    const durationMs = Math.round(performance.now() - started);
    if (compacted.runs > 0) this.sink.record({ type: 'storage_compacted', details: { ...compacted, durationMs } });
    if (Object.keys(removed).length > 0) this.sink.record({ type: 'storage_purged', details: { removed, durationMs } });
    return { removed, compacted, complete, durationMs };
  }

  /**
   * VACUUM (vacuumTables) of the tables rows were deleted from, at most once per STORAGE_VACUUM_EVERY: the space the deletes freed is then reused by the next turns' rows
   * instead of the files growing until autovacuum's turn comes (and PGlite has no autovacuum).
   */
  private async vacuum(deletedFrom: string[]): Promise<void> {
    const every = durationOrOff(this.config.get('STORAGE_VACUUM_EVERY'));
    if (every === null) return;
    this.tablesToVacuum.add(deletedFrom);
    if (!this.stopped) await this.vacuumDue(this.tablesToVacuum, every);
  }

  /**
   * VACUUM of the time partitions compaction deleted rows from (the ones being written: a run's
   * events go to the partition of its start, its compacted row with them), at most once per
   * STORAGE_VACUUM_EVERY and at least four times per partition span. A partition is written only
   * for its span and the compaction delay after it, so its size is set by the vacuums in that
   * time: with one vacuum per span, as the whole-table VACUUM runs when set to the span, the
   * vacuum's moment within the span drifts by the pass's lateness, each partition reuses more or
   * less of its compacted rows' space, and the retained partitions' sum swings slowly by a fifth
   * (bench:storage's soak, issue 43). Several per span make every partition alike.
   */
  private async vacuumCompacted(): Promise<void> {
    const every = durationOrOff(this.config.get('STORAGE_VACUUM_EVERY'));
    if (every === null || this.stopped) return;
    const span = this.partitions?.spanMs ?? 0;
    await this.vacuumDue(this.partitionsToVacuum, span > 0 ? Math.min(every, span / 4) : every);
  }

  /** A failed VACUUM is logged: the space is reused once a later one (or autovacuum) gets to it. */
  private async vacuumDue(pending: PendingVacuum, everyMs: number): Promise<void> {
    await pending.due(everyMs).catch((err: unknown) => this.logger.warn(`could not VACUUM ${(err as Error).message}`));
  }

  /** Whole partitions first, when a TIME_PARTITIONS provider is registered (DatabaseModule, global: TimePartitionsService, on PostgreSQL and PGlite); the batches remove the rest. $1 of keepSql is the deployment's retention in ms, $2 the smallest of any project's. */
  private async dropPartitions(table: 'run_events' | 'trace_events', keepSql: string, b: RetentionBounds, add: (c: Record<string, number>) => void): Promise<void> {
    if (!this.partitions) return;
    const partitions = this.partitions;
    try {
      // not under the maintenance lock: the provider runs its own transactions (one per partition,
      // under its own advisory lock), and PGlite's one connection, held by the lock's transaction,
      // would leave them waiting for ever
      const n = await partitions.dropExpired(table, keepSql, [b.deploymentMs, b.minMs]);
      if (n > 0) add({ [table]: n });
    } catch (err) {
      this.logger.warn(`could not drop expired partitions of ${table}: ${(err as Error).message}`);
    }
  }
}
