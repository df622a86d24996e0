/**
 * Key management from a shell, on the same database the service uses (DATABASE_URL or the
 * embedded PGlite in DATA_DIR; stop the service first when it uses embedded PGlite, which one
 * process at a time may open):
 *   npm run keys -- create <name> <project,project|*> <admin|user> [expiresAt]
 *   npm run keys -- list
 *   npm run keys -- revoke <id>
 */
import 'reflect-metadata';
import { DataSource } from 'typeorm';
import { readDotEnv } from '../src/config/config.module';
import { validateEnv } from '../src/config/env.schema';
import { openDatabase } from '../src/database/data-source';
import { ApiKeyRepository } from '../src/admin/repositories/api-key.repository';

const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

async function main(): Promise<void> {
  const env = validateEnv({ ...readDotEnv(), ...process.env });
  const target = await openDatabase(env.DATABASE_URL, env.DATA_DIR);
  const ds = await new DataSource(target.options).initialize();
  try {
    const store = new ApiKeyRepository(ds);
    const [cmd, ...args] = process.argv.slice(2);
    if (cmd === 'create') {
      const [name, projects, role, expiresAt] = args;
      if (!name || !projects || (role !== 'admin' && role !== 'user')) throw new Error('usage: keys create <name> <project,project|*> <admin|user> [expiresAt]');
      const list = projects.split(',').map((p) => p.trim()).filter(Boolean);
      if (!list.every((p) => p === '*' || /^[A-Za-z0-9_-]{1,64}$/.test(p))) throw new Error("each project must match [A-Za-z0-9_-]{1,64} or be '*'");
      if (expiresAt && !RFC3339.test(expiresAt)) throw new Error('expiresAt must be an RFC 3339 date-time, e.g. 2027-01-31T00:00:00Z');
      if (expiresAt && !(Date.parse(expiresAt) > Date.now())) throw new Error('expiresAt must be in the future');
      if (list.includes('*') && list.length > 1) throw new Error("projects is either * or a list of projects, not both");
      console.log(JSON.stringify(await store.create({ name, projects: list, role, expiresAt: expiresAt ?? null }), null, 2));
    } else if (cmd === 'list') {
      console.log(JSON.stringify(await store.list(), null, 2));
    } else if (cmd === 'revoke') {
      if (!/^[0-9a-f-]{36}$/i.test(args[0] ?? '')) throw new Error('usage: keys revoke <id> (a UUID from keys list)');
      if (!(await store.revoke(args[0]))) throw new Error(`no live key ${args[0] ?? ''}`);
      console.log(`revoked ${args[0]}`);
    } else {
      throw new Error('usage: keys create|list|revoke (see scripts/keys.ts)');
    }
  } finally {
    await ds.destroy();
    await target.pglite?.close();
  }
}

main().catch((err) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
