/**
 * PostgreSQL's side of a run, read through its statistics views: the CPU of the backends serving
 * the benchmark's database (from /proc, so only when the server runs on this machine), rows
 * written (pg_stat_user_tables), the database's size, and WAL bytes (cluster-wide: other
 * databases on the same server add to it).
 */
import { Client } from 'pg';
import { cpuMs } from './proc';

export interface PgSnapshot {
  backendCpu: Map<number, number>;
  rows: number;
  inserts: number;
  commits: number;
  dbBytes: number;
  walLsn: string;
}

export class PgStats {
  private constructor(private readonly client: Client) {}

  static async connect(url: string): Promise<PgStats> {
    const client = new Client({ connectionString: url });
    await client.connect();
    return new PgStats(client);
  }

  async snapshot(): Promise<PgSnapshot> {
    const pids = await this.client.query<{ pid: number }>(`SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`);
    const [t] = (await this.client.query(`SELECT coalesce(sum(n_tup_ins + n_tup_upd + n_tup_del), 0)::bigint AS rows, coalesce(sum(n_tup_ins), 0)::bigint AS inserts FROM pg_stat_user_tables`)).rows;
    const [d] = (await this.client.query(`SELECT xact_commit::bigint AS commits, pg_database_size(current_database())::bigint AS bytes, pg_current_wal_lsn()::text AS lsn FROM pg_stat_database WHERE datname = current_database()`)).rows;
    return { backendCpu: new Map(pids.rows.map((r) => [r.pid, cpuMs(r.pid)])), rows: Number(t.rows), inserts: Number(t.inserts), commits: Number(d.commits), dbBytes: Number(d.bytes), walLsn: d.lsn };
  }

  /** CPU ms the benchmark database's backends used between two snapshots (new backends count from 0) */
  static backendCpuDelta(a: PgSnapshot, bCpuNow: Map<number, number>): number {
    let sum = 0;
    for (const [pid, ms] of bCpuNow) sum += ms - (a.backendCpu.get(pid) ?? 0);
    return sum;
  }

  async walBytesSince(lsn: string): Promise<number> {
    const [r] = (await this.client.query(`SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1)::bigint AS n`, [lsn])).rows;
    return Number(r.n);
  }

  /** current backend CPU of the database's connections */
  async backendCpuNow(): Promise<Map<number, number>> {
    const pids = await this.client.query<{ pid: number }>(`SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`);
    return new Map(pids.rows.map((r) => [r.pid, cpuMs(r.pid)]));
  }

  close(): Promise<void> {
    return this.client.end();
  }
}
