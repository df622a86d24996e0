import { AdvancedConsoleLogger, type QueryRunner } from 'typeorm';

/**
 * TypeORM's console logger (what `logging` selects is printed as before) that also counts the
 * statements sent through the data source, transaction control included: the database's work
 * per turn is mostly how many statements it gets, so operators and the load benchmark read it
 * (orion_db_statements_total).
 */
export class CountingLogger extends AdvancedConsoleLogger {
  statements = 0;

  override logQuery(query: string, parameters?: unknown[], queryRunner?: QueryRunner): void {
    this.statements++;
    super.logQuery(query, parameters, queryRunner);
  }
}
