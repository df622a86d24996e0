import { Logger } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { SlotRefusal, TurnSlotStorePort } from './turn-slot-store.port';

export type { SlotRefusal } from './turn-slot-store.port';

/**
 * Concurrent-turn slots on the shared database, counted per key and per project across every
 * instance. Taking one counts the live slots and stores a new one atomically (the store's `take`),
 * so simultaneous starts on different instances cannot both pass a full limit.
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
    private readonly store: TurnSlotStorePort,
    private readonly leaseMs: number,
  ) {}

  /** A slot id, or why none was given. A limit of 0 or less is not checked. */
  async take(keyId: string, projectId: string, maxKey: number, maxProject: number): Promise<{ id: string } | { refused: SlotRefusal }> {
    const result = await this.store.take({ keyId, projectId, instance: this.instance, leaseMs: this.leaseMs }, maxKey, maxProject);
    if ('id' in result) this.hold();
    return result;
  }

  /** Gives a slot back (the turn's response closed). */
  async release(id: string): Promise<void> {
    this.held = Math.max(0, this.held - 1);
    if (this.held === 0) this.stopRenewing();
    if (this.closed) return;
    const done = this.store
      .release(id)
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
    await this.store.releaseInstance(this.instance).catch(() => undefined);
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
      await this.store.renew(this.instance, this.leaseMs);
      await this.store.purgeLapsed();
    } catch (err) {
      this.logger.warn(`could not renew turn slots: ${(err as Error).message}`);
    }
  }
}
