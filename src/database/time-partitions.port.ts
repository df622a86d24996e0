/**
 * The seam between the storage worker's retention (issue 43) and time partitions of `run_events`
 * and `trace_events` (TimePartitionsService, registered by the global DatabaseModule, on
 * PostgreSQL and PGlite alike): the worker asks it first to drop whole partitions past
 * retention, then deletes the rows still expired in bounded batches (without a provider, only
 * the batches run).
 */
export const TIME_PARTITIONS = Symbol('TIME_PARTITIONS');

export interface TimePartitions {
  /** How long each partition's range is (PARTITION_INTERVAL), ms. */
  readonly spanMs: number;

  /**
   * Drops the partitions of `table` none of whose rows must be kept; returns the rows removed.
   * `keepSql` is a boolean SQL expression over one row of the table, aliased `e` (columns of
   * `run_events` or `trace_events`), true for a row retention must keep (a live or paused run's,
   * or one still within its project's retention); its parameters are `params` as `$1…$n`. A
   * partition is dropped only when `SELECT 1 FROM <partition> e WHERE <keepSql>` finds no row.
   */
  dropExpired(table: 'run_events' | 'trace_events', keepSql: string, params: unknown[]): Promise<number>;
}
