import { mkdirSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { createPgConfig } from '@electric-sql/pglite/node-postgres';
import { vector } from '@electric-sql/pglite-pgvector';
import type { DataSourceOptions } from 'typeorm';
import { MIGRATIONS } from './migrations';

export type DatabaseKind = 'pglite' | 'postgres';

/** A database to open: where it is, and the PGlite instance behind it when embedded. */
export interface DatabaseTarget {
  kind: DatabaseKind;
  /** shown in health and logs; never contains a password */
  description: string;
  options: DataSourceOptions;
  pglite?: PGlite;
}

/**
 * Test hook: a PGlite data-dir tarball (made by test/support/global-setup.ts after running the
 * migrations) that in-memory databases start from, so each test file opens in about a second
 * instead of running initdb in WASM.
 */
const TEMPLATE_ENV = 'ORION_PGLITE_TEMPLATE';

/** Opens PGlite (embedded or in memory) or describes a PostgreSQL connection. */
export async function openDatabase(databaseUrl: string | undefined, dataDir: string): Promise<DatabaseTarget> {
  const common = {
    type: 'postgres' as const,
    migrations: MIGRATIONS,
    migrationsRun: true,
    synchronize: false,
    autoLoadEntities: true,
    uuidExtension: 'pgcrypto' as const,
    installExtensions: false,
    logging: ['error' as const],
  };
  if (databaseUrl && /^postgres(ql)?:\/\//.test(databaseUrl)) {
    return {
      kind: 'postgres',
      description: `postgres://${new URL(databaseUrl).host}${new URL(databaseUrl).pathname}`,
      options: { ...common, url: databaseUrl, poolSize: 10 } as unknown as DataSourceOptions,
    };
  }
  const inMemory = databaseUrl === 'memory://';
  let pglite: PGlite;
  if (inMemory) {
    const template = process.env[TEMPLATE_ENV];
    pglite = await PGlite.create({
      extensions: { vector },
      ...(template ? { loadDataDir: new Blob([readFileSync(template)]) } : {}),
    });
  } else {
    const dir = resolve(dataDir, 'pglite');
    mkdirSync(dir, { recursive: true });
    pglite = await PGlite.create({ dataDir: dir, extensions: { vector } });
  }
  await pglite.exec('CREATE EXTENSION IF NOT EXISTS vector');
  return {
    kind: 'pglite',
    description: inMemory ? 'pglite (in memory)' : `pglite (${resolve(dataDir, 'pglite')})`,
    pglite,
    // PGlite is one connection: pool size 1 (queries queue; never query the DataSource inside a transaction).
    options: { ...common, poolSize: 1, extra: { ...createPgConfig(pglite), pglite } } as unknown as DataSourceOptions,
  };
}
