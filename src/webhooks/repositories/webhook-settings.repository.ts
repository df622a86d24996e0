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
  /** the secret this call stored, when it stored one (shown once) */
  created: boolean;
}

const SHOWN = `project_id, url, secret_created_at, CASE WHEN previous_until > now() THEN previous_until END AS previous_until`;

function rowOf(r: Record<string, unknown>, created = false): WebhookSettingsRow {
  return {
    projectId: String(r.project_id),
    url: (r.url as string | null) ?? null,
    secretCreatedAt: new Date(r.secret_created_at as string),
    previousSecretValidUntil: r.previous_until ? new Date(r.previous_until as string) : null,
    created,
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
   * Sets the project's default URL (`url` undefined: left as it is; null: none) and stores
   * `secretIfNew` as its secret when the project has none yet; `created` says whether it did.
   */
  async configure(projectId: string, url: string | null | undefined, secretIfNew: string): Promise<WebhookSettingsRow> {
    const res = await this.ds.query(
      `INSERT INTO webhook_settings (project_id, url, secret) VALUES ($1, $2, $3)
       ON CONFLICT (project_id) DO UPDATE SET url = CASE WHEN $4 THEN EXCLUDED.url ELSE webhook_settings.url END, updated_at = now()
       RETURNING ${SHOWN}, secret = $3 AS created`,
      [projectId, url ?? null, secretIfNew, url !== undefined],
    );
    const r = queryResult(res).rows[0] as Record<string, unknown>;
    return rowOf(r, r.created === true);
  }

  /** A new secret for the project; the one it replaces still signs for `graceMs`. Creates the settings when there are none. */
  async rotate(projectId: string, secret: string, graceMs: number): Promise<WebhookSettingsRow> {
    const res = await this.ds.query(
      `INSERT INTO webhook_settings (project_id, url, secret) VALUES ($1, NULL, $2)
       ON CONFLICT (project_id) DO UPDATE SET previous_secret = webhook_settings.secret,
              previous_until = now() + make_interval(secs => $3::float8 / 1000), secret = EXCLUDED.secret, secret_created_at = now(), updated_at = now()
       RETURNING ${SHOWN}`,
      [projectId, secret, graceMs],
    );
    return rowOf(queryResult(res).rows[0] as Record<string, unknown>, true);
  }

  /** Whether the project can sign webhooks (it has a secret). */
  async hasSecret(projectId: string): Promise<boolean> {
    const rows = (await this.ds.query('SELECT 1 FROM webhook_settings WHERE project_id = $1', [projectId])) as unknown[];
    return rows.length > 0;
  }
}
