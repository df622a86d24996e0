import { Injectable, Logger, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import { DataSource, type EntityManager } from 'typeorm';
import { dayOf, daysFrom, ensurePartitions, listPartitions, PARTITION_DAYS_AHEAD, type PartitionedTable, type Query } from './partitions';
import type { TimePartitions } from './time-partitions.port';

/** How often the days ahead are topped up (besides at start-up). */
const ENSURE_EVERY_MS = 3_600_000;

/**
 * Partition changes of every instance sharing the database go one at a time (a transaction
 * advisory lock: an instance that does not get it leaves the work to the one that has it).
 */
const PARTITIONS_LOCK = `hashtext('orion.time_partitions')`;

/**
 * A partition change waits at most this long for its locks: dropping a partition locks the
 * parent table, and a turn's write must never queue behind it for long (the change is retried
 * on the next round instead). Shorter than PostgreSQL's deadlock_timeout (1 s), so a wait that
 * would deadlock is this statement's to give up, not a turn's.
 */
const LOCK_TIMEOUT = '500ms';

/**
 * The daily partitions of run_events and trace_events (src/database/partitions.ts): the next
 * PARTITION_DAYS_AHEAD days are created at start-up and every hour, and dropExpired drops whole
 * past days that hold no row the caller must keep (the retention worker's predicate).
 */
@Injectable()
export class TimePartitionsService implements TimePartitions, OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('TimePartitions');
  private timer?: NodeJS.Timeout;
  private running?: Promise<unknown>;

  constructor(private readonly ds: DataSource) {}

  async onApplicationBootstrap(): Promise<void> {
    await this.ensureAhead();
    this.timer = setInterval(() => void this.ensureAhead(), ENSURE_EVERY_MS);
    this.timer.unref();
  }

  async onApplicationShutdown(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.running;
  }

  /** Creates the missing partitions of today and the days ahead; the names created (an error is logged, and the next round tries again). */
  async ensureAhead(now = new Date()): Promise<string[]> {
    const work = this.locked(async (q) => {
      const days = daysFrom(dayOf(now), PARTITION_DAYS_AHEAD);
      return [...(await ensurePartitions(q, 'run_events', days)), ...(await ensurePartitions(q, 'trace_events', days))];
    }).catch((err: Error) => {
      this.logger.warn(`creating the partitions ahead failed (tried again within the hour): ${err.message}`);
      return [] as string[];
    });
    this.running = work;
    const created = (await work) ?? [];
    if (created.length > 0) this.logger.log(`created partitions ${created.join(', ')}`);
    return created;
  }

  async dropExpired(table: PartitionedTable, keepSql: string, params: unknown[]): Promise<number> {
    if (table !== 'run_events' && table !== 'trace_events') throw new Error(`${String(table)} is not partitioned`);
    const past = (await listPartitions((sql, p) => this.ds.query(sql, p), table)).filter((p) => p.to.getTime() <= Date.now());
    let removed = 0;
    for (const p of past) {
      // each partition in its own short transaction: the lock on the parent is held only for the drop
      const n = await this.locked(async (q) => {
        // no write into the partition between the check and the drop (reads go on)
        await q(`LOCK TABLE ${p.name} IN SHARE MODE`);
        const [keep] = (await q(`SELECT EXISTS (SELECT 1 FROM ${p.name} e WHERE ${keepSql}) AS keep`, params)) as Array<{ keep: boolean }>;
        if (keep?.keep) return 0;
        const [count] = (await q(`SELECT count(*)::int AS n FROM ${p.name}`)) as Array<{ n: number }>;
        await q(`ALTER TABLE ${table} DETACH PARTITION ${p.name}`);
        await q(`DROP TABLE ${p.name}`);
        return Number(count?.n ?? 0);
      }).catch((err: Error) => {
        this.logger.warn(`dropping partition ${p.name} failed (tried again on the next round): ${err.message}`);
        return 0;
      });
      if (n === undefined) break; // another instance is changing partitions
      removed += n;
      if (n > 0) this.logger.log(`dropped partition ${p.name} (${n} rows)`);
    }
    return removed;
  }

  /** `fn` in a transaction holding the partitions lock, with a short lock timeout; undefined when another instance holds the lock. */
  private async locked<T>(fn: (q: Query) => Promise<T>): Promise<T | undefined> {
    return this.ds.transaction(async (m: EntityManager) => {
      const [got] = (await m.query(`SELECT pg_try_advisory_xact_lock(${PARTITIONS_LOCK}) AS ok`)) as Array<{ ok: boolean }>;
      if (!got?.ok) return undefined;
      await m.query(`SET LOCAL lock_timeout = '${LOCK_TIMEOUT}'`);
      return fn((sql, p) => m.query(sql, p));
    });
  }
}
