import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { NEEDS_POSTGRES, skippedTitle } from './skip-reason';

/**
 * A fresh, migrated, isolated database for one test file:
 * - on PostgreSQL runs (DATABASE_URL=postgres://…) a new database cloned from the template;
 * - otherwise `memory://` (an in-memory PGlite loaded from the template tarball).
 * Returns the DATABASE_URL to give the app, and a cleanup to call in afterAll.
 */
export async function createTestDatabase(): Promise<{ url: string; kind: 'postgres' | 'pglite'; drop: () => Promise<void> }> {
  const base = process.env.DATABASE_URL;
  const template = process.env.ORION_PG_TEMPLATE;
  if (base && /^postgres(ql)?:\/\//.test(base) && template) {
    const name = `orion_t_${randomBytes(6).toString('hex')}`;
    const admin = new Client({ connectionString: base });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${name} TEMPLATE ${template}`);
    await admin.end();
    const u = new URL(base);
    u.pathname = `/${name}`;
    return {
      url: u.toString(),
      kind: 'postgres',
      drop: async () => {
        const c = new Client({ connectionString: base });
        await c.connect();
        await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
        await c.end();
      },
    };
  }
  return { url: 'memory://', kind: 'pglite', drop: async () => undefined };
}

/** True when this Jest run targets a PostgreSQL server. */
export function onPostgres(): boolean {
  return !!process.env.DATABASE_URL && /^postgres(ql)?:\/\//.test(process.env.DATABASE_URL);
}

/**
 * `it` for a case that only PostgreSQL can run (two connections, two instances, NOTIFY). On PGlite
 * it is skipped with `reason` in its title, and the run's summary counts it (skip-summary-reporter.js).
 */
export function itOnPostgres(reason: string, name: string, fn: jest.ProvidesCallback, timeout?: number): void {
  if (onPostgres()) it(name, fn, timeout);
  else it.skip(skippedTitle(name, NEEDS_POSTGRES, reason), fn, timeout);
}

/** `describe` for cases that only PostgreSQL can run; see itOnPostgres. */
export function describeOnPostgres(reason: string, name: string, body: () => void): void {
  if (onPostgres()) describe(name, body);
  else describe.skip(skippedTitle(name, NEEDS_POSTGRES, reason), body);
}
