import type { DataSource } from 'typeorm';

/** The tables whose size /metrics reports (issue 43): what turns, their traces and their conversations grow. */
export const SIZED_TABLES = ['run_events', 'trace_events', 'runs', 'chat_messages', 'conversations', 'approvals', 'webhook_deliveries', 'webhook_attempts', 'conversation_turns', 'idempotency_keys'] as const;

/** The time of each table's oldest row, read through an index (the first id, or the time index). */
const OLDEST: Record<string, string> = {
  run_events: `SELECT created_at AS t FROM run_events ORDER BY id LIMIT 1`,
  trace_events: `SELECT created_at AS t FROM trace_events ORDER BY created_at LIMIT 1`,
  runs: `SELECT updated_at AS t FROM runs ORDER BY updated_at LIMIT 1`,
  conversations: `SELECT updated_at AS t FROM conversations ORDER BY updated_at LIMIT 1`,
};

export interface StorageSample {
  bytes: Record<string, number>;
  /** seconds since the oldest row (runs and conversations: since their last write) */
  oldestAgeSeconds: Record<string, number>;
}

/**
 * Table sizes (pg_total_relation_size: heap, TOAST and indexes; a partitioned table's partitions
 * summed) and oldest-row ages, sampled at most once per `cacheMs` (a scrape reads the cache).
 */
export class StorageStats {
  private cached: { at: number; sample: Promise<StorageSample> } | null = null;

  constructor(
    private readonly ds: DataSource,
    private readonly cacheMs = 10_000,
  ) {}

  sample(): Promise<StorageSample> {
    const now = Date.now();
    if (!this.cached || now - this.cached.at > this.cacheMs) {
      const sample = this.read();
      this.cached = { at: now, sample };
      sample.catch(() => (this.cached = null));
    }
    return this.cached.sample;
  }

  private async read(): Promise<StorageSample> {
    const rows = (await this.ds.query(
      `SELECT t.name, (pg_total_relation_size(c.oid) + COALESCE((SELECT sum(pg_total_relation_size(i.inhrelid)) FROM pg_inherits i WHERE i.inhparent = c.oid), 0))::bigint AS bytes
         FROM unnest($1::text[]) AS t(name) JOIN pg_class c ON c.relname = t.name AND c.relnamespace = current_schema()::regnamespace`,
      [[...SIZED_TABLES]],
    )) as Array<{ name: string; bytes: string | number }>;
    const bytes = Object.fromEntries(rows.map((r) => [r.name, Number(r.bytes)]));
    const oldestAgeSeconds: Record<string, number> = {};
    for (const [table, sql] of Object.entries(OLDEST)) {
      const [r] = (await this.ds.query(`SELECT EXTRACT(EPOCH FROM now() - o.t)::float8 AS age FROM (${sql}) o`)) as Array<{ age: number | string }>;
      oldestAgeSeconds[table] = r ? Math.max(0, Number(r.age)) : 0;
    }
    return { bytes, oldestAgeSeconds };
  }
}
