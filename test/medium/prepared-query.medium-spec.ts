import { QueryFailedError, type DataSource } from 'typeorm';
import type { CountingLogger } from '../../src/database/counting-logger';
import { jsonRows, RawJson } from '../../src/database/json-rows';
import { preparedQuery } from '../../src/database/prepared-query';
import { startDatabaseContext, type DatabaseContext } from '../support/db-context';

/**
 * The hot statements' path (named prepared statements, rows as one jsonb parameter) against the
 * real database: PGlite here, PostgreSQL on test:db.
 */
describe('preparedQuery and jsonRows (medium)', () => {
  const ECHO = `SELECT e->>0 AS text, (e->>1)::int AS n, e->2 AS doc FROM jsonb_array_elements($1::jsonb) WITH ORDINALITY AS t(e, i) ORDER BY i`;
  // sequential queries reuse the pool's most recently released connection (node-postgres's pool
  // is last in, first out; PGlite has one), so this sees the connection that ran ECHO
  const PREPARED = `SELECT count(*)::int AS n FROM pg_prepared_statements WHERE statement = $1`;

  describe.each([
    ['default', {}, 1],
    ['DATABASE_PREPARED_STATEMENTS=false', { DATABASE_PREPARED_STATEMENTS: 'false' }, 0],
  ])('%s', (_name, env, preparedCopies) => {
    let db: DatabaseContext;
    let ds: DataSource;
    beforeAll(async () => {
      db = await startDatabaseContext([], [], env);
      ds = db.ds;
    });
    afterAll(async () => {
      await db?.close();
    });

    it('gives back exactly the text, numbers and JSON it was sent, in order', async () => {
      const texts = ['plain', 'quote " and \\ backslash', 'line\nbreak\ttab', 'ünïcødé 漢字 🙂', '{"looks":"like json"}', ''];
      const rows = texts.map((t, i) => [t, i, new RawJson(JSON.stringify({ content: t, seq: i }))]);
      for (let round = 0; round < 3; round++) {
        const res = await preparedQuery(ds, ECHO, [jsonRows(rows)]);
        expect(res.rows).toEqual(texts.map((t, i) => ({ text: t, n: i, doc: { content: t, seq: i } })));
      }
    });

    it(preparedCopies ? 'is parsed once per connection: the server keeps one prepared copy' : 'leaves no prepared statement on the server', async () => {
      await preparedQuery(ds, ECHO, [jsonRows([['a', 1, null]])]);
      const [{ n }] = (await ds.query(PREPARED, [ECHO])) as Array<{ n: number }>;
      expect(n).toBe(preparedCopies);
    });

    it('counts each statement and fails as DataSource.query does (QueryFailedError with the driver error)', async () => {
      const logger = ds.logger as CountingLogger;
      const before = logger.statements;
      await preparedQuery(ds, ECHO, [jsonRows([])]);
      const err = await preparedQuery(ds, ECHO, ['not json']).catch((e: unknown) => e);
      expect(logger.statements - before).toBe(2);
      expect(err).toBeInstanceOf(QueryFailedError);
      expect((err as QueryFailedError & { driverError: { code?: string } }).driverError.code).toBe('22P02');
      // the connection is usable afterwards
      expect((await preparedQuery(ds, ECHO, [jsonRows([['x', 2, null]])])).rows).toEqual([{ text: 'x', n: 2, doc: null }]);
    });
  });
});
