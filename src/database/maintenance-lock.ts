import type { DataSource, EntityManager } from 'typeorm';

/** The advisory lock the storage worker's batches hold (one instance at a time, issue 43). */
const MAINTENANCE_LOCK = `hashtextextended('orion_storage_maintenance', 0)`;

/**
 * Runs `batch` in a transaction that holds the storage worker's advisory lock; undefined (and
 * nothing run) when another instance's batch holds it. The lock is the transaction's: a batch
 * that fails or an instance that dies releases it.
 */
export async function underMaintenanceLock<T>(ds: DataSource, batch: (m: EntityManager) => Promise<T>): Promise<T | undefined> {
  return ds.transaction(async (m) => {
    const [row] = (await m.query(`SELECT pg_try_advisory_xact_lock(${MAINTENANCE_LOCK}) AS ok`)) as Array<{ ok: boolean }>;
    if (!row?.ok) return undefined;
    return batch(m);
  });
}
