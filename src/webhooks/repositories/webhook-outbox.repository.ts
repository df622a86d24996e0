import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, EntityManager } from 'typeorm';
import { queryResult } from '../../database/query-result';
import { WEBHOOK_ANSWER_LIMIT, type OutboxEventRow, type WebhookEventType } from '../webhook-event';
import type { SigningSecrets } from '../webhook-signer';

/** What the statement that closes a run (or makes it wait for a person) announces. */
export interface Announcement {
  type: WebhookEventType;
  status: string;
  stopReason: string | null;
  /**
   * The run's stored answer. Left out (undefined) where the closing statement does not know it
   * yet (the sweeper rebuilds it from the stored chunks afterwards): the row is then held back
   * for ANSWER_HOLD_MS, and `release` fills the answer in and makes it due at once.
   */
  answer?: string | null;
  usage?: Record<string, unknown> | null;
}

/**
 * How long an event whose answer is still being rebuilt waits for it. If the instance rebuilding
 * it dies meanwhile, the event still goes out when this has passed, with `answer: null`.
 */
export const ANSWER_HOLD_MS = 60_000;

/**
 * A data-modifying CTE named `name` that writes the outbox row announcing each run `source` (a
 * CTE or table with a `request_id` column) returns: in the statement that closes the run, so the
 * run's end and its announcement are committed together or not at all. Its parameters are
 * appended to `params` (numbered after those already there). A row is written only when the run
 * names a webhookUrl or its project has a default one.
 */
export function announceCte(name: string, source: string, a: Announcement, params: unknown[]): string {
  const $ = (v: unknown) => `$${params.push(v)}`;
  const held = a.answer === undefined;
  const answer = held ? 'NULL::text' : `${$(a.answer)}::text`;
  const url = `COALESCE(r.options->>'webhookUrl', s.url)`;
  return `${name} AS (
      INSERT INTO webhook_deliveries (request_id, project_id, conversation_id, type, status, stop_reason, answer, answer_truncated, usage, url, next_attempt_at)
      SELECT r.request_id, r.project_id, r.conversation_id, ${$(a.type)}::varchar, ${$(a.status)}::varchar, ${$(a.stopReason)}::varchar,
             left(${answer}, ${WEBHOOK_ANSWER_LIMIT}), COALESCE(char_length(${answer}) > ${WEBHOOK_ANSWER_LIMIT}, false), ${$(a.usage ? JSON.stringify(a.usage) : null)}::jsonb,
             ${url}, now() + make_interval(secs => ${$(held ? ANSWER_HOLD_MS : 0)}::float8 / 1000)
        FROM ${source} src JOIN runs r ON r.request_id = src.request_id LEFT JOIN webhook_settings s ON s.project_id = r.project_id
       WHERE ${url} IS NOT NULL
      RETURNING id)`;
}

/** One claimed try: the event, where it goes, and the secrets to sign it with (null: the project has none any more). */
export interface ClaimedTry extends OutboxEventRow {
  id: string;
  url: string;
  attempt: number;
  secrets: SigningSecrets | null;
}

/** How a try went, as recorded. */
export interface TryOutcome {
  statusCode: number | null;
  error: string | null;
  /** delivered (2xx), pending (tried again after `retryInMs`), failed (no tries left) */
  state: 'delivered' | 'pending' | 'failed';
  retryInMs: number;
}

export interface DeliveryLogRow {
  id: string;
  type: WebhookEventType;
  url: string;
  state: 'pending' | 'delivered' | 'failed';
  attempts: number;
  nextAttemptAt: Date | null;
  deliveredAt: Date | null;
  lastError: string | null;
  createdAt: Date;
  tries: Array<{ attempt: number; startedAt: Date; finishedAt: Date | null; statusCode: number | null; error: string | null }>;
}

const ABANDONED = 'no outcome recorded: the instance sending this try stopped';

/** The webhook outbox (webhook_deliveries) and its tries (webhook_attempts). */
@Injectable()
export class WebhookOutboxRepository {
  constructor(@InjectDataSource() private readonly ds: DataSource) {}

  /**
   * Announces a run in `m`'s transaction (or on its own): for an event whose statement has no
   * room for announceCte, such as a run that starts waiting for a person. Returns whether a row
   * was written (false: no URL applies to the run).
   */
  async announce(requestId: string, a: Announcement, m?: EntityManager): Promise<boolean> {
    const params: unknown[] = [requestId];
    const sql = `WITH src AS (SELECT $1::uuid AS request_id), ${announceCte('outbox', 'src', a, params)} SELECT count(*)::int AS n FROM outbox`;
    const rows = queryResult(await (m ?? this.ds.manager).query(sql, params)).rows as Array<{ n: number }>;
    return Number(rows[0]?.n ?? 0) > 0;
  }

  /**
   * A project's budget event (budget.reached, budget.warning) to its default webhook URL, once per
   * `dedupeKey` (the budget and its period): a second announcement of the same is dropped.
   * Returns whether a row was written (false: no URL, or already announced).
   */
  async announceProject(projectId: string, type: 'budget.reached' | 'budget.warning', details: Record<string, unknown>, dedupeKey: string): Promise<boolean> {
    const res = await this.ds.query(
      `INSERT INTO webhook_deliveries (project_id, type, status, url, details, dedupe_key, next_attempt_at)
       SELECT s.project_id, $2::varchar, $3::varchar, s.url, $4::jsonb, $5::varchar, now() FROM webhook_settings s WHERE s.project_id = $1 AND s.url IS NOT NULL
       ON CONFLICT (dedupe_key) WHERE dedupe_key IS NOT NULL DO NOTHING RETURNING id`,
      [projectId, type, type === 'budget.reached' ? 'reached' : 'warning', JSON.stringify(details), dedupeKey],
    );
    return queryResult(res).rows.length > 0;
  }

  /** Gives a held-back announcement of this run its answer and makes it due now (see Announcement.answer). */
  async release(requestId: string, answer: string): Promise<void> {
    await this.ds.query(
      `UPDATE webhook_deliveries SET answer = left($2::text, ${WEBHOOK_ANSWER_LIMIT}), answer_truncated = char_length($2::text) > ${WEBHOOK_ANSWER_LIMIT},
              next_attempt_at = now(), updated_at = now()
        WHERE request_id = $1 AND state = 'pending' AND attempts = 0 AND answer IS NULL AND type <> 'run.awaiting_approval'`,
      [requestId, answer],
    );
  }

  /**
   * Claims up to `limit` due tries for this instance (FOR UPDATE SKIP LOCKED: two instances never
   * take the same row) and pushes each row's next try `leaseMs` ahead, so a try whose instance
   * dies is taken again after that. A try that never recorded its outcome is marked so.
   */
  async claimDue(instance: string, limit: number, leaseMs: number): Promise<ClaimedTry[]> {
    const rows = queryResult(
      await this.ds.query(
        `WITH due AS (SELECT id FROM webhook_deliveries WHERE state = 'pending' AND next_attempt_at <= now()
                       ORDER BY next_attempt_at LIMIT $1 FOR UPDATE SKIP LOCKED),
              claimed AS (UPDATE webhook_deliveries d SET attempts = d.attempts + 1, next_attempt_at = now() + make_interval(secs => $2::float8 / 1000), updated_at = now()
                            FROM due WHERE d.id = due.id
                          RETURNING d.id, d.request_id, d.project_id, d.conversation_id, d.type, d.status, d.stop_reason, d.answer, d.answer_truncated, d.usage, d.details, d.url, d.attempts, d.created_at),
              abandoned AS (UPDATE webhook_attempts a SET finished_at = now(), error = $4 FROM claimed c WHERE a.delivery_id = c.id AND a.finished_at IS NULL),
              tries AS (INSERT INTO webhook_attempts (delivery_id, attempt, instance) SELECT id, attempts, $3 FROM claimed)
         SELECT c.*, s.secret, CASE WHEN s.previous_until > now() THEN s.previous_secret END AS previous_secret
           FROM claimed c LEFT JOIN webhook_settings s ON s.project_id = c.project_id`,
        [limit, leaseMs, instance, ABANDONED],
      ),
    ).rows as Array<Record<string, unknown>>;
    return rows.map((r) => ({
      id: String(r.id),
      requestId: r.request_id == null ? null : String(r.request_id),
      projectId: String(r.project_id),
      conversationId: r.conversation_id == null ? null : String(r.conversation_id),
      type: r.type as WebhookEventType,
      status: String(r.status),
      stopReason: (r.stop_reason as string | null) ?? null,
      answer: (r.answer as string | null) ?? null,
      answerTruncated: !!r.answer_truncated,
      usage: (r.usage as Record<string, unknown> | null) ?? null,
      details: (r.details as Record<string, unknown> | null) ?? null,
      createdAt: new Date(r.created_at as string),
      url: String(r.url),
      attempt: Number(r.attempts),
      secrets: r.secret ? { current: String(r.secret), previous: (r.previous_secret as string | null) ?? null } : null,
    }));
  }

  /** Records a try's outcome; ignored when the row was claimed again meanwhile (this try outlived its lease). */
  async finishTry(id: string, attempt: number, o: TryOutcome): Promise<void> {
    await this.ds.query(
      `WITH try AS (UPDATE webhook_attempts SET finished_at = now(), status_code = $3, error = $4 WHERE delivery_id = $1 AND attempt = $2 AND finished_at IS NULL)
       UPDATE webhook_deliveries SET state = $5::varchar, last_error = $4, next_attempt_at = now() + make_interval(secs => $6::float8 / 1000),
              delivered_at = CASE WHEN $5::varchar = 'delivered' THEN now() END, updated_at = now()
        WHERE id = $1 AND attempts = $2 AND state = 'pending'`,
      [id, attempt, o.statusCode, o.error, o.state, o.retryInMs],
    );
  }

  /** The delivery log of a run: its events, oldest first, each with its tries; null when there is no such run. */
  async logOf(requestId: string): Promise<DeliveryLogRow[] | null> {
    const deliveries = (await this.ds.query(
      `SELECT id, type, url, state, attempts, next_attempt_at, delivered_at, last_error, created_at FROM webhook_deliveries WHERE request_id = $1 ORDER BY created_at, id`,
      [requestId],
    )) as Array<Record<string, unknown>>;
    if (deliveries.length === 0) {
      const run = (await this.ds.query('SELECT 1 FROM runs WHERE request_id = $1', [requestId])) as unknown[];
      return run.length ? [] : null;
    }
    const tries = (await this.ds.query(
      `SELECT delivery_id, attempt, started_at, finished_at, status_code, error FROM webhook_attempts WHERE delivery_id = ANY($1::uuid[]) ORDER BY attempt`,
      [deliveries.map((d) => d.id)],
    )) as Array<Record<string, unknown>>;
    const date = (v: unknown) => (v ? new Date(v as string) : null);
    return deliveries.map((d) => ({
      id: String(d.id),
      type: d.type as WebhookEventType,
      url: String(d.url),
      state: d.state as DeliveryLogRow['state'],
      attempts: Number(d.attempts),
      nextAttemptAt: d.state === 'pending' ? date(d.next_attempt_at) : null,
      deliveredAt: date(d.delivered_at),
      lastError: (d.last_error as string | null) ?? null,
      createdAt: new Date(d.created_at as string),
      tries: tries
        .filter((t) => t.delivery_id === d.id)
        .map((t) => ({ attempt: Number(t.attempt), startedAt: new Date(t.started_at as string), finishedAt: date(t.finished_at), statusCode: t.status_code === null ? null : Number(t.status_code), error: (t.error as string | null) ?? null })),
    }));
  }
}
