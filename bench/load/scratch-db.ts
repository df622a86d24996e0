/**
 * A new, empty database on the server DATABASE_URL names, for one measured run, dropped after:
 * every run starts from the same empty schema, as the PGlite runs do, instead of on a database
 * that earlier runs keep growing (this machine's bench database had reached 1.4 GB and 2.3
 * million event rows, so each run's indexes and autovacuum work differed from the last one's).
 * Without the right to create databases, the run uses DATABASE_URL's own database and says so,
 * unless `inPlace` is false (a bench that leaves rows behind): then it gets null.
 */
import { Client } from 'pg';

export interface ScratchDatabase {
  url: string;
  drop(): Promise<void>;
}

export async function scratchDatabase(url: string, opts: { inPlace: false }): Promise<ScratchDatabase | null>;
export async function scratchDatabase(url: string, opts?: { inPlace: true }): Promise<ScratchDatabase>;
export async function scratchDatabase(url: string, opts: { inPlace: boolean } = { inPlace: true }): Promise<ScratchDatabase | null> {
  const admin = new Client({ connectionString: url });
  await admin.connect();
  const name = `orion_bench_${process.pid}_${Date.now().toString(36)}`;
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } catch (err) {
    await admin.end();
    if (!opts.inPlace) {
      console.log(`(could not create a scratch database: ${(err as Error).message}; the PostgreSQL rows are skipped)`);
      return null;
    }
    console.log(`(could not create a scratch database: ${(err as Error).message}; measuring on ${new URL(url).pathname.slice(1)} as it is)`);
    return { url, drop: async () => undefined };
  }
  const scratch = new URL(url);
  scratch.pathname = `/${name}`;
  return {
    url: scratch.toString(),
    drop: async () => {
      try {
        await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await admin.end();
      }
    },
  };
}
