/**
 * PostgreSQL's side of a run, read through its statistics views: the CPU of the backends serving
 * the benchmark's database (from /proc, so only when the server runs on this machine), rows
 * written (pg_stat_user_tables), the database's size, and WAL bytes (cluster-wide: other
 * databases on the same server add to it). With `LOAD_PG_STATEMENTS=<k>`, also the k statements
 * that cost the database most over a run, per turn, from pg_stat_statements (read before the
 * scratch database is dropped).
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

  /**
   * Empties pg_stat_statements for this database only (other databases on the server keep theirs);
   * false when the extension cannot be used (not in shared_preload_libraries, or no right to it).
   */
  async resetStatements(): Promise<boolean> {
    try {
      await this.client.query(`CREATE EXTENSION IF NOT EXISTS pg_stat_statements`);
      await this.client.query(`SELECT pg_stat_statements_reset(0, (SELECT oid FROM pg_database WHERE datname = current_database()), 0)`);
      return true;
    } catch (err) {
      console.log(`(pg_stat_statements unavailable: ${(err as Error).message})`);
      return false;
    }
  }

  /**
   * The `top` normalized statements of this database by execution time since resetStatements, per
   * turn: calls, rows, exec ms, shared blocks hit + read, dirtied, written. The statistics reader's
   * own queries (on pg_stat_* and pg_database) are left out; the total line counts every statement.
   */
  async topStatements(turns: number, top: number): Promise<string[]> {
    const { rows } = await this.client.query<{ calls: string; rows: string; ms: number; hit: string; read: string; dirtied: string; written: string; query: string }>(
      `SELECT calls, rows, total_exec_time AS ms, shared_blks_hit AS hit, shared_blks_read AS read, shared_blks_dirtied AS dirtied, shared_blks_written AS written, query
         FROM pg_stat_statements
        WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
          AND query !~ '(pg_stat_|pg_database|pg_current_wal_lsn|pg_wal_lsn_diff)'
        ORDER BY total_exec_time DESC`,
    );
    const per = (x: string | number, d: number) => (Number(x) / turns).toFixed(d);
    const sum = (k: 'calls' | 'rows' | 'ms' | 'hit' | 'read' | 'dirtied' | 'written') => rows.reduce((a, r) => a + Number(r[k]), 0);
    const line = (calls: number | string, n: number | string, ms: number, hit: number | string, read: number | string, dirtied: number | string, written: number | string, text: string) =>
      `| ${per(calls, 2)} | ${per(n, 2)} | ${per(ms, 3)} | ${per(Number(hit) + Number(read), 1)} | ${per(dirtied, 2)} | ${per(written, 2)} | ${text} |`;
    return [
      '| calls/turn | rows/turn | exec ms/turn | shared blks hit+read/turn | dirtied/turn | written/turn | statement |',
      '|---:|---:|---:|---:|---:|---:|---|',
      line(sum('calls'), sum('rows'), sum('ms'), sum('hit'), sum('read'), sum('dirtied'), sum('written'), `all ${rows.length} statements`),
      ...rows.slice(0, top).map((r) => line(r.calls, r.rows, r.ms, r.hit, r.read, r.dirtied, r.written, r.query.replace(/\s+/g, ' ').replace(/\|/g, '/').slice(0, 400))),
    ];
  }

  close(): Promise<void> {
    return this.client.end();
  }
}
