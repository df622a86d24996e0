import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import type { Repository } from 'typeorm';
import { RunEventEntity } from '../entities/run-event.entity';

/** How a run ends together with its terminal event (`done` or `paused`). */
export interface RunClosing {
  status: 'completed' | 'failed' | 'cancelled' | 'paused';
  stopReason: string | null;
}

/** This instance no longer holds the run's lease: the sweeper (or a resume) took it over. */
export class LeaseLostError extends Error {
  constructor(readonly requestId: string) {
    super(`run ${requestId}: this instance lost its lease; nothing more is stored or sent`);
    this.name = 'LeaseLostError';
  }
}

export interface StoredRunEvent {
  seq: number;
  type: string;
  data: Record<string, unknown>;
}

/** The events of each run's stream, for replay on reconnect. */
@Injectable()
export class RunEventRepository {
  constructor(@InjectRepository(RunEventEntity) private readonly events: Repository<RunEventEntity>) {}

  /** One multi-row INSERT; (request_id, seq) is unique, so a double write fails loudly. */
  async insertMany(requestId: string, rows: StoredRunEvent[]): Promise<void> {
    if (rows.length === 0) return;
    const params: unknown[] = [requestId];
    const tuples = rows.map((r) => {
      params.push(r.seq, r.type, JSON.stringify(r.data));
      const i = params.length;
      return `($1, $${i - 2}, $${i - 1}, $${i}::jsonb)`;
    });
    await this.events.query(`INSERT INTO run_events (request_id, seq, type, data) VALUES ${tuples.join(', ')}`, params);
  }

  /**
   * The executing instance's write: stored only while `owner` holds the run's lease (the row is
   * locked FOR SHARE, so a sweeper's claim waits for this insert or this insert sees the claim).
   * With `closing`, the run's terminal status is stored in the same statement as its terminal
   * event, so no client is ever sent an end the database does not hold. Throws LeaseLostError
   * when fenced.
   */
  async appendFenced(requestId: string, owner: string, rows: StoredRunEvent[], closing?: RunClosing): Promise<void> {
    if (rows.length === 0) return;
    const params: unknown[] = [requestId, owner];
    const tuples = rows.map((r) => {
      params.push(r.seq, r.type, JSON.stringify(r.data));
      const i = params.length;
      return `($${i - 2}::int, $${i - 1}::text, $${i}::jsonb)`;
    });
    let close = '';
    if (closing) {
      params.push(closing.status, closing.stopReason, rows[rows.length - 1].seq);
      const n = params.length;
      close = `, closed AS (
        UPDATE runs SET status = $${n - 2}, stop_reason = COALESCE($${n - 1}, runs.stop_reason), last_seq = GREATEST(runs.last_seq, $${n}::int),
               lease_owner = NULL, lease_expires_at = NULL, control = NULL, updated_at = now()
          FROM lease WHERE runs.request_id = lease.request_id RETURNING runs.request_id)`;
    }
    const res: unknown = await this.events.query(
      `WITH lease AS (SELECT request_id FROM runs WHERE request_id = $1 AND lease_owner = $2 AND status = 'running' FOR ${closing ? 'UPDATE' : 'SHARE'})${close}
       INSERT INTO run_events (request_id, seq, type, data)
       SELECT lease.request_id, v.seq, v.type, v.data FROM lease, (VALUES ${tuples.join(', ')}) AS v(seq, type, data)
       RETURNING seq`,
      params,
    );
    if (rowCount(res) !== rows.length) throw new LeaseLostError(requestId);
  }

  /** Events with seq > afterSeq, in order. */
  async listAfter(requestId: string, afterSeq: number, limit = 5000): Promise<StoredRunEvent[]> {
    const rows = await this.events
      .createQueryBuilder('e')
      .where('e.request_id = :requestId AND e.seq > :afterSeq', { requestId, afterSeq })
      .orderBy('e.seq', 'ASC')
      .limit(limit)
      .getMany();
    return rows.map((r) => ({ seq: r.seq, type: r.type, data: r.data }));
  }

  async maxSeq(requestId: string): Promise<number> {
    const r = await this.events
      .createQueryBuilder('e')
      .select('COALESCE(MAX(e.seq), 0)', 'max')
      .where('e.request_id = :requestId', { requestId })
      .getRawOne<{ max: string | number }>();
    return Number(r?.max ?? 0);
  }
}

function rowCount(res: unknown): number {
  if (Array.isArray(res) && res.length === 2 && Array.isArray(res[0]) && typeof res[1] === 'number') return res[1];
  return Array.isArray(res) ? res.length : 0;
}
