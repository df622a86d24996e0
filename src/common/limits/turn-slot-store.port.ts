import type { InjectionToken } from '@nestjs/common';

export type SlotRefusal = 'key' | 'project';

/** A slot asked for by one instance: whose turn it counts and how long it lives unless renewed. */
export interface SlotClaim {
  keyId: string;
  projectId: string;
  instance: string;
  leaseMs: number;
}

/**
 * The shared table of concurrent-turn slots (TurnSlots keeps the per-instance bookkeeping: what
 * it holds, renewal, shutdown). Implemented by the runs module, which owns running turns.
 */
export interface TurnSlotStorePort {
  /**
   * Counts the live slots of the claim's key and project and, if both are under their limits (a
   * limit of 0 or less is not checked), stores a new slot; atomically across every instance.
   */
  take(claim: SlotClaim, maxKey: number, maxProject: number): Promise<{ id: string } | { refused: SlotRefusal }>;
  /** Deletes one slot. */
  release(id: string): Promise<void>;
  /** Deletes every slot of an instance. */
  releaseInstance(instance: string): Promise<void>;
  /** Moves the expiry of an instance's slots `leaseMs` past now. */
  renew(instance: string, leaseMs: number): Promise<void>;
  /** Deletes slots that lapsed a while ago (their instances died). */
  purgeLapsed(): Promise<void>;
}

export const TURN_SLOT_STORE: InjectionToken<TurnSlotStorePort> = Symbol('TURN_SLOT_STORE');
