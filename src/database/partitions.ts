/**
 * Time partitions of `run_events` and `trace_events` (issue 43): one partition per UTC day,
 * named `<table>_pYYYYMMDD`, plus `<table>_default` for anything outside every day's range.
 * `run_events` is partitioned by its run's start (`run_created_at`, copied from runs.created_at
 * by the writers), so a run's events are all in one partition and (request_id, seq) stays unique
 * across the table; `trace_events` by `created_at`. Used by the migration that converts the
 * tables and by TimePartitionsService, which creates days ahead and drops expired ones.
 */

export type PartitionedTable = 'run_events' | 'trace_events';

/** The column each table is partitioned by. */
export const PARTITION_KEY: Record<PartitionedTable, string> = { run_events: 'run_created_at', trace_events: 'created_at' };

/** How many days after today have a partition ready (created at start-up and every hour). */
export const PARTITION_DAYS_AHEAD = 7;

const DAY_MS = 86_400_000;

/** Runs one statement; the rows it returns. */
export type Query = (sql: string, params?: unknown[]) => Promise<unknown>;

/** `YYYY-MM-DD` of a UTC day. */
export function dayOf(t: Date): string {
  return t.toISOString().slice(0, 10);
}

/** The day after `day`. */
export function nextDay(day: string): string {
  return dayOf(new Date(Date.parse(`${day}T00:00:00Z`) + DAY_MS));
}

/** `day` and the `ahead` days after it. */
export function daysFrom(day: string, ahead: number): string[] {
  const out = [day];
  for (let i = 0; i < ahead; i++) out.push(nextDay(out[out.length - 1]));
  return out;
}

export function partitionName(table: PartitionedTable, day: string): string {
  return `${table}_p${day.replace(/-/g, '')}`;
}

function rowsOf(res: unknown): Array<Record<string, unknown>> {
  // a QueryRunner returns the rows; the pg driver through DataSource.query too
  return Array.isArray(res) ? (res as Array<Record<string, unknown>>) : [];
}

/** The table's partitions (not the default one) with their ranges, oldest first. */
export async function listPartitions(q: Query, table: PartitionedTable): Promise<Array<{ name: string; from: Date; to: Date }>> {
  const rows = rowsOf(
    await q(
      `SELECT c.relname AS name, pg_get_expr(c.relpartbound, c.oid) AS bound
         FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
        WHERE i.inhparent = to_regclass($1)`,
      [table],
    ),
  );
  const out: Array<{ name: string; from: Date; to: Date }> = [];
  for (const r of rows) {
    const m = /FROM \('([^']+)'\) TO \('([^']+)'\)/.exec(String(r.bound));
    if (m) out.push({ name: String(r.name), from: new Date(m[1]), to: new Date(m[2]) });
  }
  return out.sort((a, b) => a.from.getTime() - b.from.getTime());
}

/**
 * Makes sure each of `days` has its partition. A day whose rows already went to the default
 * partition (Orion was down when the day should have been created) gets them moved into its new
 * partition, which is attached afterwards (ATTACH locks the parent less than CREATE … PARTITION
 * OF does). Days already covered are left alone. Returns the partitions created.
 */
export async function ensurePartitions(q: Query, table: PartitionedTable, days: readonly string[]): Promise<string[]> {
  const existing = await listPartitions(q, table);
  const key = PARTITION_KEY[table];
  const created: string[] = [];
  for (const day of days) {
    const from = new Date(`${day}T00:00:00Z`);
    const to = new Date(`${nextDay(day)}T00:00:00Z`);
    if (existing.some((p) => p.from < to && p.to > from)) continue;
    const name = partitionName(table, day);
    const bounds = `FROM ('${from.toISOString()}') TO ('${to.toISOString()}')`;
    const stray = rowsOf(await q(`SELECT EXISTS (SELECT 1 FROM ${table}_default WHERE ${key} >= $1 AND ${key} < $2) AS any`, [from, to]))[0];
    if (stray?.any) {
      await q(`CREATE TABLE ${name} (LIKE ${table} INCLUDING DEFAULTS INCLUDING CONSTRAINTS)`);
      await q(`WITH moved AS (DELETE FROM ${table}_default WHERE ${key} >= $1 AND ${key} < $2 RETURNING *) INSERT INTO ${name} SELECT * FROM moved`, [from, to]);
      await q(`ALTER TABLE ${table} ATTACH PARTITION ${name} FOR VALUES ${bounds}`);
    } else {
      await q(`CREATE TABLE ${name} PARTITION OF ${table} FOR VALUES ${bounds}`);
    }
    created.push(name);
  }
  return created;
}
