import { createHash, randomBytes } from 'node:crypto';
import type { DataSource } from 'typeorm';
import type { KeyRole, Principal } from '../../common/auth/principal';

export interface StoredKey {
  id: string;
  name: string;
  projects: string[];
  role: KeyRole;
  expiresAt: string | null;
  revokedAt: string | null;
  createdAt: string;
}

export interface NewKey {
  name: string;
  projects: string[];
  role: KeyRole;
  expiresAt?: string | null;
}

interface Row {
  id: string;
  name: string;
  projects: string[];
  role: KeyRole;
  expires_at: Date | null;
  revoked_at: Date | null;
  created_at: Date;
}

/**
 * The api_keys table, with plain SQL on a DataSource so that the HTTP routes and the shell
 * script (`npm run keys`) share it without booting Nest (hence no @Injectable: ApiKeysService
 * builds it).
 */
export class ApiKeyRepository {
  constructor(private readonly ds: DataSource) {}

  async create(k: NewKey): Promise<StoredKey & { key: string }> {
    const key = `orn_${randomBytes(32).toString('base64url')}`;
    const rows = (await this.ds.query(
      `INSERT INTO api_keys (name, key_hash, projects, role, expires_at) VALUES ($1, $2, $3::jsonb, $4, $5) RETURNING *`,
      [k.name, hashKey(key), JSON.stringify(k.projects), k.role, k.expiresAt ?? null],
    )) as Row[];
    return { ...toKey(rows[0]), key };
  }

  async list(): Promise<StoredKey[]> {
    return ((await this.ds.query('SELECT * FROM api_keys ORDER BY created_at, id')) as Row[]).map(toKey);
  }

  /** true when a live key was revoked; false when the id is unknown or already revoked */
  async revoke(id: string): Promise<boolean> {
    // a CTE: TypeORM answers a bare UPDATE … RETURNING with [rows, count], a SELECT with rows
    const rows = (await this.ds.query('WITH u AS (UPDATE api_keys SET revoked_at = now() WHERE id = $1 AND revoked_at IS NULL RETURNING id) SELECT id FROM u', [id])) as unknown[];
    return rows.length > 0;
  }

  /**
   * Revokes a live key unless it is the last live admin key for every project (issue #42):
   * `last_admin` then, and nothing changes. The live admin keys are locked first, so that two
   * admins revoking each other's key at once cannot both succeed and leave none.
   */
  async revokeKeepingAnAdmin(id: string): Promise<'revoked' | 'not_found' | 'last_admin'> {
    return this.ds.transaction(async (m) => {
      const admins = (await m.query(`SELECT id FROM api_keys WHERE ${LIVE_ADMIN} ORDER BY id FOR UPDATE`)) as Array<{ id: string }>;
      if (admins.length === 1 && admins[0].id === id) {
        const live = (await m.query('SELECT 1 FROM api_keys WHERE id = $1 AND revoked_at IS NULL', [id])) as unknown[];
        if (live.length > 0) return 'last_admin';
      }
      const rows = (await m.query('WITH u AS (UPDATE api_keys SET revoked_at = now() WHERE id = $1 AND revoked_at IS NULL RETURNING id) SELECT id FROM u', [id])) as unknown[];
      return rows.length > 0 ? 'revoked' : 'not_found';
    });
  }

  async resolve(token: string): Promise<Principal | null> {
    const rows = (await this.ds.query(
      'SELECT * FROM api_keys WHERE key_hash = $1 AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())',
      [hashKey(token)],
    )) as Row[];
    const r = rows[0];
    if (!r) return null;
    return { keyId: r.id, name: r.name, projects: r.projects.includes('*') ? '*' : r.projects, role: r.role };
  }

  async anyKeys(): Promise<boolean> {
    return ((await this.ds.query('SELECT 1 FROM api_keys LIMIT 1')) as unknown[]).length > 0;
  }

  /** Whether any key would be accepted now (neither revoked nor expired). */
  async anyValidKeys(): Promise<boolean> {
    return ((await this.ds.query('SELECT 1 FROM api_keys WHERE revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now()) LIMIT 1')) as unknown[]).length > 0;
  }
}

/** A key that is accepted now and may create and revoke keys: role admin, for every project. */
const LIVE_ADMIN = `role = 'admin' AND projects @> '["*"]'::jsonb AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())`;

export function hashKey(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}

function toKey(r: Row): StoredKey {
  const iso = (d: Date | null) => (d ? new Date(d).toISOString() : null);
  return { id: r.id, name: r.name, projects: r.projects, role: r.role, expiresAt: iso(r.expires_at), revokedAt: iso(r.revoked_at), createdAt: iso(r.created_at)! };
}
