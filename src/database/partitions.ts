/**
 * Time partitions of `run_events` and `trace_events` (issue 43): one partition per UTC day by
 * default, named `<table>_pYYYYMMDD`, plus `<table>_default` for anything outside every range.
 * PARTITION_INTERVAL may make them shorter (a span that divides a day, `<table>_pYYYYMMDDtHHMMSS`):
 * a retention of minutes or hours needs partitions a fraction of it long, or every row is
 * deleted one by one before its day can be dropped.
 * `run_events` is partitioned by its run's start (`run_created_at`, copied from runs.created_at
 * by the writers), so a run's events are all in one partition and (request_id, seq) stays unique
 * across the table; `trace_events` by `created_at`. Used by the migration that converts the
 * tables and by TimePartitionsService, which creates days ahead and drops expired ones.
 */

export type PartitionedTable = 'run_events' | 'trace_events';

/** The column each table is partitioned by. */
export const PARTITION_KEY: Record<PartitionedTable, string> = { run_events: 'run_created_at', trace_events: 'created_at' };

/** How many partitions after the current one are ready (created at start-up and every hour, or every span when shorter). */
export const PARTITION_DAYS_AHEAD = 7;

export const DAY_MS = 86_400_000;

/** A partition's range of times, [from, to). */
export interface Slot {
  from: Date;
  to: Date;
}

/** The slot of `spanMs` holding `t`, and the `ahead` slots after it. */
export function slotsFrom(t: Date, spanMs: number, ahead: number): Slot[] {
  const start = Math.floor(t.getTime() / spanMs) * spanMs;
  return Array.from({ length: ahead + 1 }, (_, i) => ({ from: new Date(start + i * spanMs), to: new Date(start + (i + 1) * spanMs) }));
}

/** The day-long slot of each `YYYY-MM-DD`. */
export function daySlots(days: readonly string[]): Slot[] {
  return days.map((day) => ({ from: new Date(`${day}T00:00:00Z`), to: new Date(`${nextDay(day)}T00:00:00Z`) }));
}

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

/** A slot's partition: the day's name for a whole UTC day, `<table>_pYYYYMMDDtHHMMSS` for a shorter one. */
export function slotName(table: PartitionedTable, slot: Slot): string {
  const iso = slot.from.toISOString();
  if (slot.to.getTime() - slot.from.getTime() === DAY_MS && iso.endsWith('T00:00:00.000Z')) return partitionName(table, iso.slice(0, 10));
  return `${table}_p${iso.slice(0, 10).replace(/-/g, '')}t${iso.slice(11, 19).replace(/:/g, '')}`;
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
  return ensureSlots(q, table, daySlots(days));
}

/** ensurePartitions for any slots (of one span or several: a slot that overlaps an existing partition is skipped). */
export async function ensureSlots(q: Query, table: PartitionedTable, slots: readonly Slot[]): Promise<string[]> {
  const existing = await listPartitions(q, table);
  const key = PARTITION_KEY[table];
  const created: string[] = [];
  for (const slot of slots) {
    const { from, to } = slot;
    if (existing.some((p) => p.from < to && p.to > from)) continue;
    const name = slotName(table, slot);
    const bounds = `FROM ('${from.toISOString()}') TO ('${to.toISOString()}')`;
    const stray = rowsOf(await q(`SELECT EXISTS (SELECT 1 FROM ${table}_default WHERE ${key} >= $1 AND ${key} < $2) AS any`, [from, to]))[0];
    // always created apart and attached: ATTACH takes a SHARE UPDATE EXCLUSIVE lock on the parent,
    // which turns' writes pass, where CREATE … PARTITION OF takes an ACCESS EXCLUSIVE one that
    // they would queue behind (with short spans this runs every span)
    await q(`CREATE TABLE ${name} (LIKE ${table} INCLUDING DEFAULTS INCLUDING CONSTRAINTS)`);
    if (stray?.any) await q(`WITH moved AS (DELETE FROM ${table}_default WHERE ${key} >= $1 AND ${key} < $2 RETURNING *) INSERT INTO ${name} SELECT * FROM moved`, [from, to]);
    await q(`ALTER TABLE ${table} ATTACH PARTITION ${name} FOR VALUES ${bounds}`);
    created.push(name);
  }
  return created;
}
