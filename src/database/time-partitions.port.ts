export const TIME_PARTITIONS = Symbol('TIME_PARTITIONS');
export interface TimePartitions {
  /** drops whole partitions of `table` all of whose rows are past retention (the caller's predicate as SQL over the partition, e.g. no live/paused run, every project's retention passed); returns rows removed */
  dropExpired(table: 'run_events' | 'trace_events', keepSql: string, params: unknown[]): Promise<number>;
}
