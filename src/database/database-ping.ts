import type { DataSource } from 'typeorm';

/** The cheapest statement the database must answer: the health route's check that it is up. */
export async function pingDatabase(ds: DataSource): Promise<void> {
  await ds.query('SELECT 1');
}
