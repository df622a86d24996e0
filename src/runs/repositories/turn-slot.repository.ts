import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import type { SlotClaim, SlotRefusal, TurnSlotStorePort } from '../../common/limits/turn-slot-store.port';

/** Every instance takes slots under one lock: a count and its insert must not interleave. */
const SLOT_LOCK = 0x0e10_51d7;

/**
 * The turn_slots table (migration 1764250000000): concurrent-turn slots shared by every instance.
 * The runs module owns it because a slot is a running turn's claim, held until its run ends.
 */
@Injectable()
export class TurnSlotRepository implements TurnSlotStorePort {
  constructor(@InjectDataSource() private readonly ds: DataSource) {}

  /** The count and its insert in one transaction under an advisory lock: simultaneous starts cannot both pass a full limit. */
  take(claim: SlotClaim, maxKey: number, maxProject: number): Promise<{ id: string } | { refused: SlotRefusal }> {
    return this.ds.transaction(async (m) => {
      await m.query('SELECT pg_advisory_xact_lock($1)', [SLOT_LOCK]);
      const [{ k, p }] = (await m.query(
        `SELECT count(*) FILTER (WHERE key_id = $1)::int AS k, count(*) FILTER (WHERE project_id = $2)::int AS p
           FROM turn_slots WHERE expires_at > now() AND (key_id = $1 OR project_id = $2)`,
        [claim.keyId, claim.projectId],
      )) as Array<{ k: number; p: number }>;
      if (maxKey > 0 && k >= maxKey) return { refused: 'key' as const };
      if (maxProject > 0 && p >= maxProject) return { refused: 'project' as const };
      const [row] = (await m.query(
        `INSERT INTO turn_slots (key_id, project_id, instance, expires_at) VALUES ($1, $2, $3, now() + make_interval(secs => $4::float8 / 1000)) RETURNING id`,
        [claim.keyId, claim.projectId, claim.instance, claim.leaseMs],
      )) as Array<{ id: string }>;
      return { id: row.id };
    });
  }

  async release(id: string): Promise<void> {
    await this.ds.query('DELETE FROM turn_slots WHERE id = $1', [id]);
  }

  async releaseInstance(instance: string): Promise<void> {
    await this.ds.query('DELETE FROM turn_slots WHERE instance = $1', [instance]);
  }

  async renew(instance: string, leaseMs: number): Promise<void> {
    await this.ds.query(`UPDATE turn_slots SET expires_at = now() + make_interval(secs => $2::float8 / 1000) WHERE instance = $1`, [instance, leaseMs]);
  }

  /** Lapsed slots of instances that died, kept a minute for whoever looks. */
  async purgeLapsed(): Promise<void> {
    await this.ds.query(`DELETE FROM turn_slots WHERE expires_at < now() - interval '1 minute'`);
  }
}
