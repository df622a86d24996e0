import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { vector } from '@electric-sql/pglite-pgvector';
import { createPgConfig } from '@electric-sql/pglite/node-postgres';
import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { MIGRATIONS } from '../../src/database/migrations';

/**
 * Runs once per Jest run. Builds a migrated database template so each test file opens its own
 * isolated database in about a second:
 * - PGlite (default): a data-dir tarball that `memory://` databases load (ORION_PGLITE_TEMPLATE);
 * - PostgreSQL (`DATABASE_URL=postgres://…`): a migrated template database that test files clone
 *   with CREATE DATABASE … TEMPLATE (ORION_PG_TEMPLATE).
 */
export default async function globalSetup(): Promise<void> {
  process.env.NODE_ENV = 'test';
  const url = process.env.DATABASE_URL;
  if (url && /^postgres(ql)?:\/\//.test(url)) {
    const template = `orion_tpl_${process.pid}`;
    const admin = new Client({ connectionString: url });
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS ${template}`);
    await admin.query(`CREATE DATABASE ${template}`);
    await admin.end();
    const tplUrl = new URL(url);
    tplUrl.pathname = `/${template}`;
    const ds = new DataSource({ type: 'postgres', url: tplUrl.toString(), migrations: MIGRATIONS, uuidExtension: 'pgcrypto', installExtensions: false });
    await ds.initialize();
    await ds.query('CREATE EXTENSION IF NOT EXISTS vector').catch(() => undefined);
    await ds.runMigrations();
    await ds.destroy();
    process.env.ORION_PG_TEMPLATE = template;
    return;
  }
  const pglite = await PGlite.create({ extensions: { vector } });
  await pglite.exec('CREATE EXTENSION IF NOT EXISTS vector');
  const ds = new DataSource({
    type: 'postgres',
    poolSize: 1,
    extra: { ...createPgConfig(pglite) },
    migrations: MIGRATIONS,
    uuidExtension: 'pgcrypto',
    installExtensions: false,
  });
  await ds.initialize();
  await ds.runMigrations();
  await ds.destroy();
  const dump = await pglite.dumpDataDir('none');
  await pglite.close();
  const dir = join(__dirname, '..', '..', 'node_modules', '.cache', 'orion-test');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `pglite-template-${process.pid}.tar`);
  writeFileSync(file, Buffer.from(await dump.arrayBuffer()));
  process.env.ORION_PGLITE_TEMPLATE = file;
}
