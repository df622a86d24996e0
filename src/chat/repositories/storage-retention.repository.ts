import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, EntityManager } from 'typeorm';
import { queryResult } from '../../database/query-result';
import { HELD_STATUSES, pastRetention } from '../../database/retention-sql';

/** A project's own retention, milliseconds: null = the deployment's RETENTION_*, -1 = kept for ever. */
export interface ProjectRetentionRow {
  projectId: string;
  runsMs: number | null;
  traceMs: number | null;
  conversationsMs: number | null;
  updatedAt: Date;
}

/**
 * Conversations' retention and each project's own retention values (issue 43): the storage
 * worker's statements on conversations and messages, and the admin route's table.
 */
@Injectable()
export class StorageRetentionRepository {
  constructor(@InjectDataSource() private readonly ds: DataSource) {}

  async projectRetention(projectId: string): Promise<ProjectRetentionRow | undefined> {
    const rows = (await this.ds.query(`SELECT project_id, runs_ms, trace_ms, conversations_ms, updated_at FROM project_retention WHERE project_id = $1`, [projectId])) as RawRow[];
    return rows[0] ? rowOf(rows[0]) : undefined;
  }

  /** Every project's own values (few rows: one per project that set one). */
  async allProjectRetention(): Promise<ProjectRetentionRow[]> {
    return ((await this.ds.query(`SELECT project_id, runs_ms, trace_ms, conversations_ms, updated_at FROM project_retention ORDER BY project_id`)) as RawRow[]).map(rowOf);
  }

  /** Stores a project's values (all three: the caller merged the ones it leaves as they were). */
  async setProjectRetention(projectId: string, v: { runsMs: number | null; traceMs: number | null; conversationsMs: number | null }): Promise<ProjectRetentionRow> {
    const res: unknown = await this.ds.query(
      `INSERT INTO project_retention (project_id, runs_ms, trace_ms, conversations_ms) VALUES ($1, $2, $3, $4)
       ON CONFLICT (project_id) DO UPDATE SET runs_ms = EXCLUDED.runs_ms, trace_ms = EXCLUDED.trace_ms, conversations_ms = EXCLUDED.conversations_ms, updated_at = now()
       RETURNING project_id, runs_ms, trace_ms, conversations_ms, updated_at`,
      [projectId, v.runsMs, v.traceMs, v.conversationsMs],
    );
    return rowOf(queryResult(res).rows[0] as RawRow);
  }

  /**
   * Up to `limit` conversations not written to for longer than their project's
   * RETENTION_CONVERSATIONS, oldest first, locked for this transaction: none with a live or
   * paused run, a queued turn, or a webhook still being delivered. `graceMs` (two partition spans)
   * more: their runs' events and trace records go with their partitions first, not row by row.
   */
  async claimExpiredConversations(m: EntityManager, deploymentMs: number, minMs: number, limit: number, graceMs = 0): Promise<string[]> {
    const rows = (await m.query(
      `SELECT c.id FROM conversations c
        WHERE ${pastRetention('conversations', '(c.updated_at + make_interval(secs => $4::float8 / 1000))', 'c.project_id', '$1', '$2')}
          AND NOT EXISTS (SELECT 1 FROM runs r WHERE r.conversation_id = c.id AND r.status IN ${HELD_STATUSES})
          AND NOT EXISTS (SELECT 1 FROM conversation_turns t WHERE t.conversation_id = c.id)
          AND NOT EXISTS (SELECT 1 FROM webhook_deliveries w WHERE w.conversation_id = c.id AND w.state = 'pending')
        ORDER BY c.updated_at LIMIT $3 FOR UPDATE OF c SKIP LOCKED`,
      [deploymentMs, minMs, limit, graceMs],
    )) as Array<{ id: string }>;
    return rows.map((r) => r.id);
  }

  /** Deletes these conversations and their messages (their runs are deleted first by the caller); counts per table. */
  async deleteConversations(m: EntityManager, ids: string[]): Promise<{ chat_messages: number; conversations: number }> {
    if (ids.length === 0) return { chat_messages: 0, conversations: 0 };
    const chat_messages = queryResult(await m.query(`DELETE FROM chat_messages WHERE conversation_id = ANY($1::uuid[]) RETURNING 1`, [ids])).count;
    const conversations = queryResult(await m.query(`DELETE FROM conversations WHERE id = ANY($1::uuid[]) RETURNING 1`, [ids])).count;
    return { chat_messages, conversations };
  }
}

interface RawRow {
  project_id: string;
  runs_ms: string | number | null;
  trace_ms: string | number | null;
  conversations_ms: string | number | null;
  updated_at: Date | string;
}

function rowOf(r: RawRow): ProjectRetentionRow {
  const n = (v: string | number | null) => (v === null ? null : Number(v));
  return { projectId: r.project_id, runsMs: n(r.runs_ms), traceMs: n(r.trace_ms), conversationsMs: n(r.conversations_ms), updatedAt: new Date(r.updated_at) };
}
