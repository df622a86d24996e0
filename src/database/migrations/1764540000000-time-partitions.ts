import type { MigrationInterface, QueryRunner } from 'typeorm';
import { dayOf, daysFrom, ensurePartitions, PARTITION_DAYS_AHEAD, type PartitionedTable, type Query } from '../partitions';

/**
 * `run_events` and `trace_events` become tables partitioned by time, one partition per UTC day
 * (issue 43), so retention can drop a whole day instead of deleting its rows; on PostgreSQL and
 * on PGlite alike (PGlite is PostgreSQL compiled to WebAssembly and partitions the same way).
 *
 * - `run_events` by its run's start, `run_created_at` (new; runs.created_at, which the writers
 *   copy from the run row they lock anyway): a run's events stay in one partition, so the
 *   primary key (id, run_created_at) and the unique (request_id, seq, run_created_at) — a key of
 *   a partitioned table must hold the partition key — are as unique as (id) and (request_id, seq)
 *   were, a run having one start. The column defaults to now() for any other writer.
 * - `trace_events` by `created_at`; primary key (id, created_at), ids still from one sequence.
 *
 * Each table is converted in this migration's transaction: the old one is renamed, the new one
 * created with a partition for every day that holds rows, today and the next days, and a
 * default partition; every row is copied with its id, the id sequence moves to the new table
 * (ids keep increasing, none reused), the keys and indexes are built after the copy, the row
 * counts are compared and the old table dropped. The view run_event_list is recreated on it.
 */
export class TimePartitions1764540000000 implements MigrationInterface {
  name = 'TimePartitions1764540000000';

  async up(q: QueryRunner): Promise<void> {
    const query: Query = (sql, params) => q.query(sql, params);
    const today = dayOf(new Date());
    const ahead = daysFrom(today, PARTITION_DAYS_AHEAD);
    const days = async (sql: string): Promise<string[]> => ((await q.query(sql)) as Array<{ day: string }>).map((r) => r.day);

    await q.query('DROP VIEW IF EXISTS run_event_list');

    // run_events
    await q.query('ALTER TABLE run_events RENAME TO run_events_unpartitioned');
    await q.query('ALTER TABLE run_events_unpartitioned RENAME CONSTRAINT run_events_pkey TO run_events_unpartitioned_pkey');
    await q.query('ALTER TABLE run_events_unpartitioned RENAME CONSTRAINT uq_run_events_seq TO uq_run_events_unpartitioned_seq');
    await q.query('ALTER SEQUENCE run_events_id_seq OWNED BY NONE');
    await q.query(`CREATE TABLE run_events (
      id bigint NOT NULL DEFAULT nextval('run_events_id_seq'),
      request_id uuid NOT NULL,
      seq int NOT NULL,
      type varchar(32) NOT NULL,
      data jsonb NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      last_seq int,
      run_created_at timestamptz NOT NULL DEFAULT now()) PARTITION BY RANGE (run_created_at)`);
    await q.query('ALTER SEQUENCE run_events_id_seq OWNED BY run_events.id');
    await q.query('CREATE TABLE run_events_default PARTITION OF run_events DEFAULT');
    const runDays = await days(
      `SELECT DISTINCT to_char(r.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day FROM runs r WHERE EXISTS (SELECT 1 FROM run_events_unpartitioned e WHERE e.request_id = r.request_id)`,
    );
    await ensurePartitions(query, 'run_events', [...new Set([...runDays, ...ahead])].sort());
    await q.query(`INSERT INTO run_events (id, request_id, seq, type, data, created_at, last_seq, run_created_at)
      SELECT e.id, e.request_id, e.seq, e.type, e.data, e.created_at, e.last_seq, r.created_at
        FROM run_events_unpartitioned e JOIN runs r ON r.request_id = e.request_id`);
    await q.query('ALTER TABLE run_events ADD CONSTRAINT run_events_pkey PRIMARY KEY (id, run_created_at)');
    await q.query('ALTER TABLE run_events ADD CONSTRAINT uq_run_events_seq UNIQUE (request_id, seq, run_created_at)');
    await q.query('ALTER TABLE run_events ADD CONSTRAINT run_events_request_id_fkey FOREIGN KEY (request_id) REFERENCES runs(request_id) ON DELETE CASCADE');
    await this.sameCount(q, 'run_events');

    // trace_events
    await q.query('ALTER TABLE trace_events RENAME TO trace_events_unpartitioned');
    await q.query('ALTER TABLE trace_events_unpartitioned RENAME CONSTRAINT trace_events_pkey TO trace_events_unpartitioned_pkey');
    await q.query('ALTER INDEX idx_trace_events_request RENAME TO idx_trace_events_unpartitioned_request');
    await q.query('ALTER INDEX idx_trace_events_project_type RENAME TO idx_trace_events_unpartitioned_project_type');
    await q.query('ALTER SEQUENCE trace_events_id_seq OWNED BY NONE');
    await q.query(`CREATE TABLE trace_events (
      id bigint NOT NULL DEFAULT nextval('trace_events_id_seq'),
      request_id varchar(64),
      project_id varchar(64),
      type varchar(48) NOT NULL,
      details jsonb NOT NULL DEFAULT '{}'::jsonb,
      created_at timestamptz NOT NULL DEFAULT now()) PARTITION BY RANGE (created_at)`);
    await q.query('ALTER SEQUENCE trace_events_id_seq OWNED BY trace_events.id');
    await q.query('CREATE TABLE trace_events_default PARTITION OF trace_events DEFAULT');
    const traceDays = await days(`SELECT DISTINCT to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day FROM trace_events_unpartitioned`);
    await ensurePartitions(query, 'trace_events', [...new Set([...traceDays, ...ahead])].sort());
    await q.query(`INSERT INTO trace_events (id, request_id, project_id, type, details, created_at)
      SELECT id, request_id, project_id, type, details, created_at FROM trace_events_unpartitioned`);
    await q.query('ALTER TABLE trace_events ADD CONSTRAINT trace_events_pkey PRIMARY KEY (id, created_at)');
    await q.query('CREATE INDEX idx_trace_events_request ON trace_events (request_id, id)');
    await q.query('CREATE INDEX idx_trace_events_project_type ON trace_events (project_id, type, id)');
    await this.sameCount(q, 'trace_events');

    await q.query('DROP TABLE run_events_unpartitioned');
    await q.query('DROP TABLE trace_events_unpartitioned');
    await q.query(RUN_EVENT_LIST);
  }

  async down(q: QueryRunner): Promise<void> {
    // back to plain tables, every row and id kept
    await q.query('DROP VIEW IF EXISTS run_event_list');
    for (const table of ['run_events', 'trace_events'] as PartitionedTable[]) {
      await q.query(`ALTER TABLE ${table} RENAME TO ${table}_partitioned`);
      await q.query(`ALTER TABLE ${table}_partitioned RENAME CONSTRAINT ${table}_pkey TO ${table}_partitioned_pkey`);
      await q.query(`ALTER SEQUENCE ${table}_id_seq OWNED BY NONE`);
    }
    await q.query('ALTER TABLE run_events_partitioned RENAME CONSTRAINT uq_run_events_seq TO uq_run_events_partitioned_seq');
    await q.query('ALTER INDEX idx_trace_events_request RENAME TO idx_trace_events_partitioned_request');
    await q.query('ALTER INDEX idx_trace_events_project_type RENAME TO idx_trace_events_partitioned_project_type');
    await q.query(`CREATE TABLE run_events (
      id bigint PRIMARY KEY DEFAULT nextval('run_events_id_seq'),
      request_id uuid NOT NULL REFERENCES runs(request_id) ON DELETE CASCADE,
      seq int NOT NULL,
      type varchar(32) NOT NULL,
      data jsonb NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      last_seq int,
      CONSTRAINT uq_run_events_seq UNIQUE (request_id, seq))`);
    await q.query(`INSERT INTO run_events (id, request_id, seq, type, data, created_at, last_seq)
      SELECT id, request_id, seq, type, data, created_at, last_seq FROM run_events_partitioned`);
    await q.query(`CREATE TABLE trace_events (
      id bigint PRIMARY KEY DEFAULT nextval('trace_events_id_seq'),
      request_id varchar(64),
      project_id varchar(64),
      type varchar(48) NOT NULL,
      details jsonb NOT NULL DEFAULT '{}'::jsonb,
      created_at timestamptz NOT NULL DEFAULT now())`);
    await q.query(`INSERT INTO trace_events (id, request_id, project_id, type, details, created_at)
      SELECT id, request_id, project_id, type, details, created_at FROM trace_events_partitioned`);
    await q.query('CREATE INDEX idx_trace_events_request ON trace_events (request_id, id)');
    await q.query('CREATE INDEX idx_trace_events_project_type ON trace_events (project_id, type, id)');
    for (const table of ['run_events', 'trace_events'] as PartitionedTable[]) {
      await this.sameCount(q, table, `${table}_partitioned`);
      await q.query(`ALTER SEQUENCE ${table}_id_seq OWNED BY ${table}.id`);
      await q.query(`DROP TABLE ${table}_partitioned`);
    }
    await q.query(RUN_EVENT_LIST);
  }

  /** Refuses to go on (the transaction rolls back) unless the new table holds every row of the old. */
  private async sameCount(q: QueryRunner, table: PartitionedTable, old = `${table}_unpartitioned`): Promise<void> {
    const [r] = (await q.query(`SELECT (SELECT count(*) FROM ${old}) AS old, (SELECT count(*) FROM ${table}) AS new`)) as Array<{ old: string; new: string }>;
    if (String(r.old) !== String(r.new)) throw new Error(`${table}: ${r.old} rows before the conversion, ${r.new} after; nothing was changed`);
  }
}

/** The view of one row per event (migration 1764300000000), on whichever run_events is current. */
const RUN_EVENT_LIST = `CREATE VIEW run_event_list AS
  SELECT e.request_id, e.seq, e.type, e.data, e.created_at FROM run_events e WHERE e.last_seq IS NULL
  UNION ALL
  SELECT e.request_id, e.seq + (x.i - 1)::int AS seq, 'chunk' AS type, x.data, e.created_at
    FROM run_events e, jsonb_array_elements(e.data) WITH ORDINALITY AS x(data, i)
   WHERE e.last_seq IS NOT NULL`;
