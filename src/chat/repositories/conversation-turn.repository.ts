import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, EntityManager } from 'typeorm';
import type { RunOptions } from '../../runs/entities/run.entity';
import { queryResult } from '../../database/query-result';
import type { QueuedTurns } from '../../runs/queued-turns.port';

/** NOTIFY channel that wakes the queued turns of a conversation; payload: the conversation id. */
export const CONVERSATION_TURNS_CHANNEL = 'orion_conversation_turns';

/** How a queued turn got its place: behind the others (`enqueue`), or first, displacing the active turn. */
export type QueuedStrategy = 'enqueue' | 'interrupt' | 'rollback';

/** What a queued turn needs to open its run when it starts (its message is stored then). */
export interface QueuedTurnSpec {
  protocol: string;
  options: RunOptions;
}

export interface QueuedTurn {
  requestId: string;
  conversationId: string;
  projectId: string;
  content: string;
  strategy: QueuedStrategy;
  /** the turn an interrupt or rollback cancelled when it was queued */
  displaces: string | null;
  turn: QueuedTurnSpec;
}

interface Row {
  request_id: string;
  conversation_id: string;
  project_id: string;
  content: string;
  strategy: QueuedStrategy;
  displaces: string | null;
  turn: QueuedTurnSpec;
}

/**
 * The conversation_turns table (migration 1764460000000): the turns waiting for their
 * conversation's active turn to end, and the marks an interrupt or rollback leaves on the turn it
 * displaced. Every decision about a conversation's turns is taken under one advisory lock per
 * conversation, in one transaction, on whichever instance asks: two messages at once, on two
 * instances, are decided one after the other.
 */
@Injectable()
export class ConversationTurnRepository implements QueuedTurns {
  constructor(@InjectDataSource() private readonly ds: DataSource) {}

  /** Runs `fn` in a transaction holding the conversation's lock (released at commit or rollback). */
  underLock<T>(conversationId: string, fn: (m: EntityManager) => Promise<T>): Promise<T> {
    return this.ds.transaction(async (m) => {
      await m.query(`SELECT pg_advisory_xact_lock(hashtextextended('orion_conversation_turns:' || $1, 0))`, [conversationId]);
      return fn(m);
    });
  }

  /**
   * The conversation's queued turns in the order they start: interrupts and rollbacks first,
   * each group first in, first out. Turns whose waiting instance died (lease lapsed) are removed first.
   */
  async queue(m: EntityManager, conversationId: string): Promise<QueuedTurn[]> {
    await m.query(`DELETE FROM conversation_turns WHERE conversation_id = $1 AND expires_at < now()`, [conversationId]);
    const rows = (await m.query(
      `SELECT request_id, conversation_id, project_id, content, strategy, displaces, turn FROM conversation_turns
        WHERE conversation_id = $1 ORDER BY (strategy <> 'enqueue') DESC, created_at, request_id`,
      [conversationId],
    )) as Row[];
    return rows.map(toTurn);
  }

  /** Queues a turn, held by `instance` for `leaseMs` (renewed while it waits). */
  async insert(m: EntityManager, t: QueuedTurn, instance: string, leaseMs: number): Promise<void> {
    await m.query(
      `INSERT INTO conversation_turns (request_id, conversation_id, project_id, content, strategy, displaces, turn, instance, expires_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb, $8, now() + make_interval(secs => $9::float8 / 1000))`,
      [t.requestId, t.conversationId, t.projectId, t.content, t.strategy, t.displaces, JSON.stringify(t.turn), instance, leaseMs],
    );
  }

  /** Takes a queued turn out of the queue (it starts, or is cancelled); false when it was not there. */
  async remove(m: EntityManager, requestId: string): Promise<boolean> {
    return queryResult(await m.query(`DELETE FROM conversation_turns WHERE request_id = $1 RETURNING request_id`, [requestId])).count > 0;
  }

  /** Keeps this instance's queued turns from lapsing. */
  async renew(requestIds: string[], leaseMs: number): Promise<void> {
    if (requestIds.length === 0) return;
    await this.ds.query(`UPDATE conversation_turns SET expires_at = now() + make_interval(secs => $2::float8 / 1000) WHERE request_id = ANY($1::uuid[])`, [requestIds, leaseMs]);
  }

  /**
   * Cancels a queued turn: removed from the queue, and its conversation's waiters woken (its own
   * waiter learns it was cancelled). Undefined when it is not queued (it started, or never was).
   */
  async cancel(requestId: string): Promise<{ conversationId: string; projectId: string; protocol: string } | undefined> {
    const rows = (await this.ds.query(
      `WITH gone AS (DELETE FROM conversation_turns WHERE request_id = $1 RETURNING conversation_id, project_id, turn->>'protocol' AS protocol)
       SELECT conversation_id, project_id, protocol, pg_notify('${CONVERSATION_TURNS_CHANNEL}', conversation_id::text) FROM gone`,
      [requestId],
    )) as Array<{ conversation_id: string; project_id: string; protocol: string }>;
    return rows[0] ? { conversationId: rows[0].conversation_id, projectId: rows[0].project_id, protocol: rows[0].protocol } : undefined;
  }

  /** The project of a queued turn; undefined when it is not queued. */
  async projectOf(requestId: string): Promise<string | undefined> {
    const rows = (await this.ds.query('SELECT project_id FROM conversation_turns WHERE request_id = $1', [requestId])) as Array<{ project_id: string }>;
    return rows[0]?.project_id;
  }

  /**
   * Whether a run of the conversation ended in the last few seconds without its answer stored yet
   * (a cancelled paused run and a swept run are closed first, their answer stored right after):
   * the next turn waits for it, so its history has it.
   */
  async answerPending(m: EntityManager, conversationId: string): Promise<boolean> {
    const [row] = (await m.query(
      `SELECT EXISTS (SELECT 1 FROM runs r WHERE r.conversation_id = $1 AND r.status IN ('completed','cancelled','failed')
                        AND r.updated_at > now() - interval '5 seconds'
                        AND NOT EXISTS (SELECT 1 FROM chat_messages c WHERE c.request_id = r.request_id AND c.role = 'assistant')) AS pending`,
      [conversationId],
    )) as Array<{ pending: boolean }>;
    return row?.pending === true;
  }

  /**
   * An interrupted turn's answer keeps its text and says it was interrupted, and by which turn:
   * the first interrupt that starts after it. Several interrupts queued against the same turn each
   * mark it when they start, in queue order; only the first mark sticks, the later ones did not cut it off.
   */
  async markInterrupted(m: EntityManager, requestId: string, by: string): Promise<void> {
    await m.query(
      `UPDATE chat_messages SET metadata = metadata || jsonb_build_object('interruptedBy', $2::text)
        WHERE request_id = $1 AND role = 'assistant' AND metadata->>'stopReason' = 'cancelled' AND NOT (metadata ? 'interruptedBy')`,
      [requestId, by],
    );
  }

  /**
   * A rolled-back turn's user message and answer leave the conversation's history (listing and
   * model context) but stay stored, marked, with the run's record and trace.
   */
  async markRolledBack(m: EntityManager, requestId: string, by: string): Promise<void> {
    await m.query(`UPDATE chat_messages SET metadata = metadata || jsonb_build_object('rolledBackBy', $2::text) WHERE request_id = $1`, [requestId, by]);
  }
}

function toTurn(r: Row): QueuedTurn {
  return {
    requestId: r.request_id,
    conversationId: r.conversation_id,
    projectId: r.project_id,
    content: r.content,
    strategy: r.strategy,
    displaces: r.displaces,
    turn: typeof r.turn === 'string' ? (JSON.parse(r.turn) as QueuedTurnSpec) : r.turn,
  };
}
