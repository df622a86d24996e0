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
