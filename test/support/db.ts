import { randomBytes } from 'node:crypto';
import { Client } from 'pg';

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
