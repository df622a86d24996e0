import { Global, Injectable, Module } from '@nestjs/common';
import type { PGlite } from '@electric-sql/pglite';
import type { DatabaseKind, DatabaseTarget } from './data-source';

/**
 * What database this app instance opened: its kind (for health) and, when embedded, the PGlite
 * instance (whose own LISTEN/NOTIFY is used in place of a pooled `pg` connection).
 */
@Injectable()
export class DatabaseInfo {
  private target?: DatabaseTarget;

  /** called once by the data source factory */
  set(target: DatabaseTarget): void {
    this.target = target;
  }
  get kind(): DatabaseKind | undefined {
    return this.target?.kind;
  }
  get description(): string {
    return this.target?.description ?? 'not connected';
  }
  get pglite(): PGlite | undefined {
    return this.target?.pglite;
  }
}

@Global()
@Module({ providers: [DatabaseInfo], exports: [DatabaseInfo] })
export class DatabaseInfoModule {}
