import type { RunStatus } from './entities/run.entity';

/**
 * The statuses in which a run is its conversation's active turn (issue 33): a conversation runs
 * one turn at a time, and a message that arrives meanwhile follows its multitask strategy.
 * The one list of them: a run waiting for a person (approvals) is active too.
 */
export const ACTIVE_RUN_STATUSES: readonly RunStatus[] = ['running', 'paused', 'awaiting_approval'];
