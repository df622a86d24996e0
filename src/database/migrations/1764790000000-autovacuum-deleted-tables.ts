import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Autovacuum per table for the tables retention deletes rows from and turns update (issue 43).
 * PostgreSQL's default waits for a fifth of a table's rows to be dead: `runs` takes about a dozen
 * updates per turn, none of them HOT (updated_at and status are indexed), so between visits the
 * table grows by dead versions many times its live rows, and the file keeps what it grew to
 * (VACUUM reuses the space; only trailing empty pages are given back). Two percent plus 200 rows
 * brings autovacuum at each of its rounds instead; the storage worker's own VACUUM
 * (STORAGE_VACUUM_EVERY) runs beside it. The partitioned tables are dropped a partition at a time
 * and take no table options; PGlite, without autovacuum, keeps the options unused.
 */
const TABLES = ['runs', 'approvals', 'webhook_deliveries', 'webhook_attempts', 'chat_messages', 'conversations', 'conversation_turns'];

export class AutovacuumDeletedTables1764790000000 implements MigrationInterface {
  name = 'AutovacuumDeletedTables1764790000000';

  async up(q: QueryRunner): Promise<void> {
    for (const t of TABLES) await q.query(`ALTER TABLE ${t} SET (autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_threshold = 200, autovacuum_analyze_scale_factor = 0.05)`);
  }

  async down(q: QueryRunner): Promise<void> {
    for (const t of TABLES) await q.query(`ALTER TABLE ${t} RESET (autovacuum_vacuum_scale_factor, autovacuum_vacuum_threshold, autovacuum_analyze_scale_factor)`);
  }
}
