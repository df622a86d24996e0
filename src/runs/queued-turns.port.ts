import type { InjectionToken } from '@nestjs/common';
import type { RunDto } from './dto/run.dto';

/**
 * The turns a conversation keeps waiting for its active turn (issue 33): not runs yet, but named
 * by the requestId their stream announced, so the cancel route reaches them. Implemented by the
 * chat module, which owns the queue, and handed to RunsModule.register: runs does not import chat.
 */
export interface QueuedTurns {
  /** Removes a queued turn from its queue; undefined when `requestId` is not queued (it started, or never was). */
  cancel(requestId: string): Promise<{ conversationId: string; projectId: string; protocol: string } | undefined>;
}

export const QUEUED_TURNS: InjectionToken<QueuedTurns> = Symbol('QUEUED_TURNS');

/** What the cancel route answers for a queued turn it cancelled: a run that never ran. */
export function cancelledQueuedTurn(requestId: string, t: { conversationId: string; projectId: string; protocol: string }): RunDto {
  const now = new Date().toISOString();
  return {
    requestId,
    status: 'cancelled',
    protocol: t.protocol,
    phaseIndex: 0,
    cycleIndex: 0,
    conversationId: t.conversationId,
    projectId: t.projectId,
    lastSeq: 0,
    stopReason: 'cancelled',
    control: null,
    checkpoints: [],
    parentRequestId: null,
    forkedFromPhaseIndex: null,
    forks: [],
    usage: null,
    createdAt: now,
    updatedAt: now,
  };
}
