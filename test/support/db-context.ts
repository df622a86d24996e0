import type { INestApplicationContext, Provider } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DataSource, type EntitySchema } from 'typeorm';
import { AppConfigModule } from '../../src/config/config.module';
import { DatabaseModule } from '../../src/database/database.module';
import { createTestDatabase } from './db';

export interface DatabaseContext {
  ctx: INestApplicationContext;
  ds: DataSource;
  /** closes the context, then drops its database */
  close(): Promise<void>;
}

/**
 * The database layer alone (configuration, data source, migrations) on a fresh test database,
 * with the given entities' repositories and providers: what a medium test of raw SQL needs.
 */
export async function startDatabaseContext(entities: Array<Function | EntitySchema>, providers: Provider[], env: Record<string, string> = {}): Promise<DatabaseContext> {
  const db = await createTestDatabase();
  const moduleRef = await Test.createTestingModule({
    imports: [
      AppConfigModule.forRoot({ DATABASE_URL: db.url, LLM_PROVIDER: 'replay', LOG_LEVEL: 'error', ...env }),
      DatabaseModule,
      TypeOrmModule.forFeature(entities),
    ],
    providers,
  }).compile();
  const ctx = await moduleRef.init();
  return {
    ctx,
    ds: ctx.get(DataSource),
    close: async () => {
      await ctx.close();
      await db.drop();
    },
  };
}
