import { Logger } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { DataSource } from 'typeorm';

/** Every instance takes slots under one lock: a count and its insert must not interleave. */
const SLOT_LOCK = 0x0e10_51d7;

export type SlotRefusal = 'key' | 'project';

/**
 * Concurrent-turn slots on the shared database, counted per key and per project across every
 * instance. Taking one counts the live slots and inserts a new one in one transaction under an
 * advisory lock, so simultaneous starts on different instances cannot both pass a full limit.
 * Each instance renews its own slots' expiry; a slot of an instance that died lapses after
 * `leaseMs` and stops counting.
 */
export class TurnSlots {
  private readonly logger = new Logger('TurnSlots');
  readonly instance = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  private held = 0;
  private timer: NodeJS.Timeout | null = null;
  private closed = false;
  private readonly releasing = new Set<Promise<void>>();

  constructor(
    private readonly ds: DataSource,
    private readonly leaseMs: number,
  ) {}

  /** A slot id, or why none was given. A limit of 0 or less is not checked. */
  async take(keyId: string, projectId: string, maxKey: number, maxProject: number): Promise<{ id: string } | { refused: SlotRefusal }> {
    const result = await this.ds.transaction(async (m) => {
      await m.query('SELECT pg_advisory_xact_lock($1)', [SLOT_LOCK]);
      const [{ k, p }] = (await m.query(
        `SELECT count(*) FILTER (WHERE key_id = $1)::int AS k, count(*) FILTER (WHERE project_id = $2)::int AS p
           FROM turn_slots WHERE expires_at > now() AND (key_id = $1 OR project_id = $2)`,
        [keyId, projectId],
      )) as Array<{ k: number; p: number }>;
      if (maxKey > 0 && k >= maxKey) return { refused: 'key' as const };
      if (maxProject > 0 && p >= maxProject) return { refused: 'project' as const };
      const [row] = (await m.query(
        `INSERT INTO turn_slots (key_id, project_id, instance, expires_at) VALUES ($1, $2, $3, now() + make_interval(secs => $4::float8 / 1000)) RETURNING id`,
        [keyId, projectId, this.instance, this.leaseMs],
      )) as Array<{ id: string }>;
      return { id: row.id };
    });
    if ('id' in result) this.hold();
    return result;
  }

  /** Gives a slot back (the turn's response closed). */
  async release(id: string): Promise<void> {
    this.held = Math.max(0, this.held - 1);
    if (this.held === 0) this.stopRenewing();
    if (this.closed) return;
    const done = this.ds
      .query('DELETE FROM turn_slots WHERE id = $1', [id])
      .catch((err: Error) => {
        // it lapses at its expiry anyway
        this.logger.warn(`could not release turn slot ${id}: ${err.message}`);
      })
      .finally(() => this.releasing.delete(done));
    this.releasing.add(done);
    await done;
  }

  /** Shutdown, before the database closes: this instance's slots go at once, not at their expiry. */
  async close(): Promise<void> {
    this.closed = true;
    this.stopRenewing();
    await Promise.allSettled([...this.releasing]);
    await this.ds.query('DELETE FROM turn_slots WHERE instance = $1', [this.instance]).catch(() => undefined);
  }

  private stopRenewing(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  private hold(): void {
    this.held++;
    if (this.timer) return;
    this.timer = setInterval(() => void this.renew(), Math.max(500, this.leaseMs / 3));
    this.timer.unref?.();
  }

  private async renew(): Promise<void> {
    try {
      await this.ds.query(`UPDATE turn_slots SET expires_at = now() + make_interval(secs => $2::float8 / 1000) WHERE instance = $1`, [this.instance, this.leaseMs]);
      // lapsed slots of instances that died, kept a minute for whoever looks
      await this.ds.query(`DELETE FROM turn_slots WHERE expires_at < now() - interval '1 minute'`);
    } catch (err) {
      this.logger.warn(`could not renew turn slots: ${(err as Error).message}`);
    }
  }
}
