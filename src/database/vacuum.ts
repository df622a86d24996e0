import type { DataSource } from 'typeorm';
import { SIZED_TABLES } from './storage-stats';

/**
 * VACUUM (not FULL: it takes no lock a turn's statement waits for; SKIP_LOCKED: a table another
 * VACUUM holds is left for the next time) of those of `tables` that are the storage tables
 * (SIZED_TABLES); the names are checked against that list, never taken as given. Outside any
 * transaction, as VACUUM must be.
 */
export async function vacuumTables(ds: DataSource, tables: readonly string[]): Promise<string[]> {
  const known = tables.filter((t) => (SIZED_TABLES as readonly string[]).includes(t));
  if (known.length > 0) await ds.query(`VACUUM (SKIP_LOCKED) ${known.join(', ')}`);
  return known;
}

/** A time partition's name (src/database/partitions.ts): a slot's, or the default one. */
const PARTITION_NAME = /^(run_events|trace_events)_(p\d{8}(t\d{6})?|default)$/;

/**
 * VACUUM (SKIP_LOCKED) of those of `names` that are time partitions of run_events or trace_events
 * and still exist (one dropped since it was named is left out: VACUUM of a missing table fails);
 * the names vacuumed. The names are checked against the partitions' pattern, never taken as given.
 */
export async function vacuumPartitions(ds: DataSource, names: readonly string[]): Promise<string[]> {
  const wanted = names.filter((n) => PARTITION_NAME.test(n));
  if (wanted.length === 0) return [];
  const rows = (await ds.query(`SELECT relname AS name FROM pg_class WHERE relkind = 'r' AND relnamespace = current_schema()::regnamespace AND relname = ANY($1::text[])`, [wanted])) as Array<{ name: string }>;
  const known = rows.map((r) => r.name).filter((n) => PARTITION_NAME.test(n));
  if (known.length > 0) await ds.query(`VACUUM (SKIP_LOCKED) ${known.join(', ')}`);
  return known;
}

/**
 * The names that wait for a VACUUM and when the last one ran: one VACUUM of all of them at most
 * once per interval (each caller's own), by `run`. Names added while a VACUUM runs wait for the next.
 */
export class PendingVacuum {
  private readonly names = new Set<string>();
  private lastAt = 0;

  constructor(private readonly run: (names: string[]) => Promise<unknown>) {}

  add(names: Iterable<string>): void {
    for (const n of names) this.names.add(n);
  }

  /**
   * Runs the VACUUM when names wait and `everyMs` has passed since the last one; the names it
   * took. A failure throws, its message prefixed with those names (they are not kept for the next).
   */
  async due(everyMs: number): Promise<string[]> {
    if (this.names.size === 0 || Date.now() - this.lastAt < everyMs) return [];
    const names = [...this.names];
    this.names.clear();
    this.lastAt = Date.now();
    try {
      await this.run(names);
    } catch (err) {
      throw new Error(`${names.join(', ')}: ${(err as Error).message}`);
    }
    return names;
  }
}
