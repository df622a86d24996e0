import { rmSync } from 'node:fs';
import { Client } from 'pg';

/** Removes what global-setup made: the PGlite template tarball, or the PostgreSQL template database. */
export default async function globalTeardown(): Promise<void> {
  const file = process.env.ORION_PGLITE_TEMPLATE;
  if (file) rmSync(file, { force: true });
  const template = process.env.ORION_PG_TEMPLATE;
  const url = process.env.DATABASE_URL;
  if (template && url && /^postgres(ql)?:\/\//.test(url)) {
    const admin = new Client({ connectionString: url });
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS ${template} WITH (FORCE)`).catch(() => undefined);
    await admin.end();
  }
}
