import 'reflect-metadata';
import { DataSource } from 'typeorm';
import { MIGRATIONS } from './src/database/migrations';

/**
 * Data source for the TypeORM CLI against PostgreSQL (`DATABASE_URL=postgres://…`):
 *   npm run migration:run (or: npm run typeorm -- migration:show)
 * The service itself runs the same migrations at start-up.
 */
const url = process.env.DATABASE_URL;
if (!url || !/^postgres(ql)?:\/\//.test(url)) {
  throw new Error('ormconfig: set DATABASE_URL=postgres://user:pass@host:5432/db (the CLI works against PostgreSQL)');
}

export default new DataSource({
  type: 'postgres',
  url,
  migrations: MIGRATIONS,
  synchronize: false,
  uuidExtension: 'pgcrypto',
  installExtensions: false,
});
