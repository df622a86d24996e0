import { createHash } from 'node:crypto';
import { type DataSource, QueryFailedError } from 'typeorm';

/** What a prepared statement gave back. */
export interface PreparedResult {
  rows: unknown[];
  rowCount: number;
}

/** statement text → its name (a hash of the text, so one text always has one name) */
const names = new Map<string, string>();

function nameOf(text: string): string {
  let name = names.get(text);
  if (name === undefined) {
    name = `orion_${createHash('sha1').update(text).digest('hex').slice(0, 20)}`;
    names.set(text, name);
  }
  return name;
}

/** Whether this data source sends named prepared statements (DATABASE_PREPARED_STATEMENTS). */
function usesPreparedStatements(ds: DataSource): boolean {
  return (ds.options as { extra?: { preparedStatements?: boolean } }).extra?.preparedStatements !== false;
}

/**
 * Runs one of the statements every turn sends several times (the grouped event writes, the
 * trace writes, the notifications, a turn's closing write and its answer) as a named prepared
 * statement: each pooled connection parses and plans it once, then only binds and executes it.
 * Their parse and plan are a good part of their cost (the event writes are CTEs that lock,
 * update and insert): `npm run bench:statements` compares the grouped event write prepared and
 * unnamed (bench/README.md, "Statement shapes").
 *
 * `text` must be a fixed text (values go in `params`): its hash names the statement, and every
 * connection keeps each prepared text until it closes. With DATABASE_PREPARED_STATEMENTS=false
 * (a proxy in front of PostgreSQL that does not support named prepared statements) the statement
 * is sent unnamed, as every other statement is. Counted in
 * orion_db_statements_total like any query of the data source; errors are TypeORM's
 * QueryFailedError, as from `DataSource.query`.
 */
export async function preparedQuery(ds: DataSource, text: string, params: unknown[]): Promise<PreparedResult> {
  const runner = ds.createQueryRunner('master');
  try {
    const client = (await runner.connect()) as { query(config: { name?: string; text: string; values: unknown[] }): Promise<{ rows: unknown[]; rowCount: number | null }> };
    ds.logger.logQuery(text, params, runner);
    try {
      const res = await client.query(usesPreparedStatements(ds) ? { name: nameOf(text), text, values: params } : { text, values: params });
      return { rows: res.rows, rowCount: res.rowCount ?? res.rows.length };
    } catch (err) {
      ds.logger.logQueryError(err as Error, text, params, runner);
      throw new QueryFailedError(text, params, err as Error);
    }
  } finally {
    await runner.release();
  }
}
