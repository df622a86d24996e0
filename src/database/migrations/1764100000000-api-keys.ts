import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * API keys bound to projects (docs/API.md "Keys"). Only the SHA-256 of a key is stored: the keys
 * are 256 random bits, so a fast hash is enough (nothing to brute-force) and a lookup is one
 * index probe. Revoked keys stay as rows, so the table's having any row means "keyed mode"
 * for good: revoking the last key never reopens the service to everyone.
 */
export class ApiKeys1764100000000 implements MigrationInterface {
  name = 'ApiKeys1764100000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE api_keys (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      name varchar(128) NOT NULL,
      key_hash char(64) NOT NULL UNIQUE,
      projects jsonb NOT NULL,
      role varchar(8) NOT NULL CHECK (role IN ('admin', 'user')),
      expires_at timestamptz,
      revoked_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now()
    )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP TABLE api_keys');
  }
}
