import { Injectable, Logger, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import { DataSource, type EntityManager } from 'typeorm';
import { AppConfigService } from '../config/app-config.service';
import { partitionSpanMs } from '../config/duration';
import { DAY_MS, ensureSlots, listPartitions, PARTITION_DAYS_AHEAD, PARTITION_KEY, slotsFrom, type PartitionedTable, type Query, type Slot } from './partitions';
import type { TimePartitions } from './time-partitions.port';

/** How often the partitions ahead are topped up at most (besides at start-up); a span shorter than this is topped up once per span. */
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
const LOCK_TIMEOUT = '100ms';

/**
 * Attaching a partition locks the default partition exclusively (PostgreSQL must re-check and
 * narrow its constraint; CREATE TABLE … PARTITION OF does the same, and locks the parent
 * exclusively too). Every read of run_events by request id (the events route, a resume, the
 * worker's batches) opens all partitions, the default one included, so on a busy table the
 * attach meets one in flight and its LOCK_TIMEOUT expires. Those reads are short: a timed-out
 * round is tried again this many times, after ENSURE_RETRY_MS × its number, within a second or
 * two, instead of waiting for the next round (the partitions ahead are PARTITION_DAYS_AHEAD spans,
 * so a lost round costs nothing yet, but a log line an operator reads as a failure).
 */
const ENSURE_TRIES = 5;
const ENSURE_RETRY_MS = 150;

/** lock_timeout expired (SQLSTATE 55P03), from the pg driver or PGlite through TypeORM. */
function isLockTimeout(err: unknown): boolean {
  const e = err as { code?: string; driverError?: { code?: string } };
  return e?.code === '55P03' || e?.driverError?.code === '55P03';
}

/** The name suffix of a partition detached for dropping (an operator's own detached tables are never touched). */
const DROPPING = '_dropping';

/**
 * The time partitions of run_events and trace_events (src/database/partitions.ts), each
 * PARTITION_INTERVAL long (a day by default): the current one and the next PARTITION_DAYS_AHEAD
 * are created at start-up and every hour (every span, when a span is shorter), and dropExpired
 * drops whole past partitions that hold no row the caller must keep (the retention worker's
 * predicate).
 */
@Injectable()
export class TimePartitionsService implements TimePartitions, OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('TimePartitions');
  private timer?: NodeJS.Timeout;
  private running?: Promise<unknown>;

  /** The span of a partition, ms */
  readonly spanMs: number;

  constructor(
    private readonly ds: DataSource,
    config: AppConfigService,
  ) {
    this.spanMs = partitionSpanMs(config.get('PARTITION_INTERVAL')) ?? DAY_MS;
  }

  async onApplicationBootstrap(): Promise<void> {
    await this.ensureAhead();
    this.timer = setInterval(() => void this.ensureAhead(), Math.min(ENSURE_EVERY_MS, this.spanMs));
    this.timer.unref();
  }

  async onApplicationShutdown(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.running;
  }

  /**
   * Creates the missing partitions of now and the spans ahead; the names created. A lock wait
   * that timed out is tried again a few times at once (see ENSURE_TRIES); any other error is
   * logged, and the next round tries again.
   */
  async ensureAhead(now = new Date()): Promise<string[]> {
    const once = () =>
      this.locked(async (q) => {
        const slots = slotsFrom(now, this.spanMs, PARTITION_DAYS_AHEAD);
        const created: string[] = [];
        for (const table of ['run_events', 'trace_events'] as const) {
          await this.fitOtherSpans(q, table, slots[0]);
          created.push(...(await ensureSlots(q, table, slots)));
        }
        return created;
      });
    const work = (async () => {
      for (let attempt = 1; ; attempt++) {
        try {
          return await once();
        } catch (err) {
          if (!isLockTimeout(err) || attempt >= ENSURE_TRIES) throw err;
          await new Promise((r) => setTimeout(r, ENSURE_RETRY_MS * attempt));
        }
      }
    })().catch((err: Error) => {
      this.logger.warn(`creating the partitions ahead failed (tried again within the hour): ${err.message}`);
      return [] as string[];
    });
    this.running = work;
    const created = (await work) ?? [];
    if (created.length > 0) this.logger.log(`created partitions ${created.join(', ')}`);
    return created;
  }

  /**
   * The current and future partitions of another span than PARTITION_INTERVAL (made by the
   * migration, a day each, or before the setting changed) make way for the new span from the
   * next slot on: an empty one is dropped; the current one, holding rows, is re-attached to end
   * where the current slot ends (its rows all fit; ATTACH checks them).
   */
  private async fitOtherSpans(q: Query, table: PartitionedTable, current: Slot): Promise<void> {
    for (const p of await listPartitions(q, table)) {
      if (p.to <= current.from || p.to.getTime() - p.from.getTime() === this.spanMs) continue;
      const key = PARTITION_KEY[table];
      const [r] = (await q(`SELECT max(${key}) AS last FROM ${p.name}`)) as Array<{ last: Date | string | null }>;
      if (r?.last === null || r?.last === undefined) {
        await q(`ALTER TABLE ${table} DETACH PARTITION ${p.name}`);
        await q(`DROP TABLE ${p.name}`);
      } else if (p.from < current.to && p.to > current.to && new Date(r.last) < current.to) {
        await q(`ALTER TABLE ${table} DETACH PARTITION ${p.name}`);
        await q(`ALTER TABLE ${table} ATTACH PARTITION ${p.name} FOR VALUES FROM ('${p.from.toISOString()}') TO ('${current.to.toISOString()}')`);
      }
    }
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
        await q(`ALTER TABLE ${p.name} RENAME TO ${p.name}${DROPPING}`);
        return Number(count?.n ?? 0);
      }).catch((err: Error) => {
        this.logger.warn(`dropping partition ${p.name} failed (tried again on the next round): ${err.message}`);
        return 0;
      });
      if (n === undefined) break; // another instance is changing partitions
      removed += n;
      if (n > 0) this.logger.log(`dropped partition ${p.name} (${n} rows)`);
    }
    await this.dropDetached(table);
    return removed;
  }

  /**
   * The detached partitions (renamed `…_dropping`) are dropped each in a transaction of its own,
   * after their detach committed: DROP locks `runs` (the foreign key's table), and taking that
   * while holding the parent's lock, as one transaction, could deadlock with a turn that holds a
   * runs row and waits for run_events. One left by a failed drop goes on the next round.
   */
  private async dropDetached(table: PartitionedTable): Promise<void> {
    const left = (await this.ds.query(`SELECT relname AS name FROM pg_class WHERE relkind = 'r' AND relnamespace = current_schema()::regnamespace AND relname LIKE $1`, [`${table}\\_p%${DROPPING}`])) as Array<{ name: string }>;
    for (const { name } of left) {
      await this.locked((q) => q(`DROP TABLE IF EXISTS ${name}`)).catch((err: Error) => this.logger.warn(`dropping the detached partition ${name} failed (tried again on the next round): ${err.message}`));
    }
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
