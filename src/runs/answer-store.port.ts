import type { InjectionToken } from '@nestjs/common';
import type { TurnUsage } from '../orchestration/protocol-event';

export type AnswerStatus = 'complete' | 'cancelled' | 'error';

/** The `metadata` JSONB of an assistant message: how its turn ended. */
export interface AnswerMetadata {
  stopReason: string;
  protocol?: string;
  /** the model that answered */
  model?: string;
  usage?: TurnUsage;
  /** why a turn closed without its protocol (`instance_lost`, `storage_error`, …) */
  error?: string;
  /** what happened in the turn, in order: tools, sources, notices, errors, phases */
  steps?: TurnStep[];
  /** the answer of a fork: the run it was forked from (whose own answer is kept) and the checkpoint */
  forkOf?: { requestId: string; phaseIndex: number };
}

/** One tool call of a turn as its stream showed it (arguments secret-masked). */
export interface TurnToolStep {
  type: 'tool';
  callId: string;
  name: string;
  /** `requested`/`running` remain only for a turn that ended while the call was open */
  status: 'requested' | 'running' | 'completed' | 'failed' | 'refused';
  arguments?: unknown;
  outcome?: string;
  isError: boolean;
  durationMs?: number;
  /** the tool's own reason when it failed */
  message?: string;
  phaseIndex?: number;
  /** how many characters of the answer had been streamed when the call was first named: where it sits in the text */
  textOffset?: number;
}

/**
 * A call that waited for a person, as the approvals route returns it (`reason`: why it waited;
 * `decisionReason`: the denial's reason, or `timeout`), so a reloaded page draws the decided card
 * without asking the route. `void`: the run stopped waiting (ended, paused or lost) undecided.
 */
export interface TurnApprovalStep {
  type: 'approval';
  approvalId: string;
  tool: string;
  callId: string;
  arguments: unknown;
  reason: string;
  expiresAt: string | null;
  status: 'pending' | 'approved' | 'denied' | 'expired' | 'void';
  decision: 'approve' | 'deny' | null;
  edited: boolean;
  by: string | null;
  decisionReason: string | null;
  phaseIndex?: number;
}

/** A stored step of a turn (the messages route returns them as `steps`). */
export type TurnStep =
  | TurnToolStep
  | TurnApprovalStep
  | { type: 'sources'; data: unknown[]; sourceTypes: string[]; ragCount: number; webCount: number; confidence: string; metrics?: Record<string, unknown> }
  | { type: 'notice'; code: string; message: string }
  | { type: 'error'; code: string; message: string }
  | { type: 'phase'; phase: string; phaseIndex: number; cycleIndex: number; endReason?: string | null };

/**
 * Where a run's answer is kept: the conversation's assistant message. Implemented by the chat
 * module (which owns conversations) and handed to RunsModule.register, so the run engine does
 * not import the layer above it.
 */
export interface AnswerStore {
  /** stores the assistant message of a turn exactly once per requestId (and marks the conversation active now); returns the stored row's id */
  insertAssistantOnce(conversationId: string, requestId: string, content: string, status: AnswerStatus, metadata: AnswerMetadata): Promise<{ message: { id: string }; created: boolean }>;
}

export const ANSWER_STORE: InjectionToken<AnswerStore> = Symbol('ANSWER_STORE');
