import { Global, Logger, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { AppConfigService } from '../config/app-config.service';
import { DatabaseInfo, DatabaseInfoModule } from './database-info';
import { openDatabase, type DatabaseTarget } from './data-source';
import { DbNotifierService } from './db-notifier.service';
import { IdempotencyKeyStore } from './idempotency-key.store';
import { KeyedProgressStore } from './keyed-progress.store';
import { TIME_PARTITIONS } from './time-partitions.port';
import { TimePartitionsService } from './time-partitions.service';

/**
 * The TypeORM data source: embedded PGlite (default, `DATA_DIR`), in-memory PGlite
 * (`DATABASE_URL=memory://`) or PostgreSQL (`postgres://…`). Migrations run at start;
 * PGlite is closed after TypeORM lets go of it, so its files are flushed. TIME_PARTITIONS: the
 * daily partitions of run_events and trace_events (created ahead here, dropped by retention).
 */
@Global()
@Module({
  imports: [
    DatabaseInfoModule,
    TypeOrmModule.forRootAsync({
      imports: [DatabaseInfoModule],
      inject: [AppConfigService, DatabaseInfo],
      useFactory: async (config: AppConfigService, info: DatabaseInfo) => {
        const target = await openDatabase(config.get('DATABASE_URL'), config.get('DATA_DIR'), { profile: config.get('PGLITE_PROFILE'), preparedStatements: config.get('DATABASE_PREPARED_STATEMENTS') });
        info.set(target);
        return target.options;
      },
      dataSourceFactory: async (options) => {
        const ds = new DataSource(options!);
        // data-source.ts keeps the embedded PGlite on `extra.pglite` (pg ignores the key)
        const pglite = (options as { extra?: { pglite?: DatabaseTarget['pglite'] } }).extra?.pglite;
        const destroy = ds.destroy.bind(ds);
        ds.destroy = async () => {
          await destroy();
          if (pglite && !pglite.closed) await pglite.close();
        };
        try {
          await ds.initialize();
        } catch (err) {
          if (pglite && !pglite.closed) await pglite.close();
          throw err;
        }
        new Logger('Database').log('Connected; migrations up to date');
        return ds;
      },
    }),
  ],
  providers: [DbNotifierService, IdempotencyKeyStore, KeyedProgressStore, TimePartitionsService, { provide: TIME_PARTITIONS, useExisting: TimePartitionsService }],
  exports: [DatabaseInfoModule, DbNotifierService, IdempotencyKeyStore, KeyedProgressStore, TIME_PARTITIONS],
})
export class DatabaseModule {}

