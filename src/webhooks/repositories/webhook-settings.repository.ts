import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { queryResult } from '../../database/query-result';

/** A project's webhook settings as shown (never a secret). */
export interface WebhookSettingsRow {
  projectId: string;
  url: string | null;
  /** when the current secret was made */
  secretCreatedAt: Date;
  /** until when the rotated-out secret still signs; null when there is none */
  previousSecretValidUntil: Date | null;
  /** the secret this call made, when it made one (shown once) */
  secret: string | null;
}

const SHOWN = `project_id, url, secret_created_at, CASE WHEN previous_until > now() THEN previous_until END AS previous_until`;

/**
 * A new signing secret, made by the database: `whsec_` and 32 bytes in base64, the bytes of two
 * random UUIDs (gen_random_uuid, from the server's strong random source: 244 random bits). Made
 * in the statement rather than sent to it, so a secret is never a statement parameter, which a
 * failed statement's log line would print.
 */
const NEW_SECRET = `'whsec_' || encode(decode(replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', ''), 'hex'), 'base64')`;

function rowOf(r: Record<string, unknown>): WebhookSettingsRow {
  return {
    projectId: String(r.project_id),
    url: (r.url as string | null) ?? null,
    secretCreatedAt: new Date(r.secret_created_at as string),
    previousSecretValidUntil: r.previous_until ? new Date(r.previous_until as string) : null,
    secret: (r.new_secret as string | null | undefined) ?? null,
  };
}

/** webhook_settings: each project's default webhook URL and signing secrets. */
@Injectable()
export class WebhookSettingsRepository {
  constructor(@InjectDataSource() private readonly ds: DataSource) {}

  async find(projectId: string): Promise<WebhookSettingsRow | null> {
    const rows = (await this.ds.query(`SELECT ${SHOWN} FROM webhook_settings WHERE project_id = $1`, [projectId])) as Array<Record<string, unknown>>;
    return rows[0] ? rowOf(rows[0]) : null;
  }

  /**
   * Sets the project's default URL (`url` undefined: left as it is; null: none) and makes its
   * secret when the project has none yet (then returned, once: an inserted row has xmax 0).
   */
  async configure(projectId: string, url: string | null | undefined): Promise<WebhookSettingsRow> {
    const res = await this.ds.query(
      `INSERT INTO webhook_settings (project_id, url, secret) VALUES ($1, $2, ${NEW_SECRET})
       ON CONFLICT (project_id) DO UPDATE SET url = CASE WHEN $3 THEN EXCLUDED.url ELSE webhook_settings.url END, updated_at = now()
       RETURNING ${SHOWN}, CASE WHEN xmax = 0 THEN secret END AS new_secret`,
      [projectId, url ?? null, url !== undefined],
    );
    return rowOf(queryResult(res).rows[0] as Record<string, unknown>);
  }

  /** A new secret for the project, returned once; the one it replaces still signs for `graceMs`. Creates the settings when there are none. */
  async rotate(projectId: string, graceMs: number): Promise<WebhookSettingsRow> {
    const res = await this.ds.query(
      `INSERT INTO webhook_settings (project_id, url, secret) VALUES ($1, NULL, ${NEW_SECRET})
       ON CONFLICT (project_id) DO UPDATE SET previous_secret = webhook_settings.secret,
              previous_until = now() + make_interval(secs => $2::float8 / 1000), secret = EXCLUDED.secret, secret_created_at = now(), updated_at = now()
       RETURNING ${SHOWN}, secret AS new_secret`,
      [projectId, graceMs],
    );
    return rowOf(queryResult(res).rows[0] as Record<string, unknown>);
  }

  /** Whether the project can sign webhooks (it has a secret). */
  async hasSecret(projectId: string): Promise<boolean> {
    const rows = (await this.ds.query('SELECT 1 FROM webhook_settings WHERE project_id = $1', [projectId])) as unknown[];
    return rows.length > 0;
  }
}
