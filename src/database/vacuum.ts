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
