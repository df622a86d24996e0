import type { InjectionToken } from '@nestjs/common';
import type { TurnUsage } from '../orchestration/protocol-event';

export type AnswerStatus = 'complete' | 'cancelled' | 'error';

/** The `metadata` JSONB of an assistant message: how its turn ended. */
export interface AnswerMetadata {
  stopReason: string;
  protocol?: string;
  usage?: TurnUsage;
  /** why a turn closed without its protocol (`instance_lost`, `storage_error`, …) */
  error?: string;
  /** the answer of a fork: the run it was forked from (whose own answer is kept) and the checkpoint */
  forkOf?: { requestId: string; phaseIndex: number };
}

/**
 * Where a run's answer is kept: the conversation's assistant message. Implemented by the chat
 * module (which owns conversations) and handed to RunsModule.register, so the run engine does
 * not import the layer above it.
 */
export interface AnswerStore {
  /** stores the assistant message of a turn exactly once per requestId; returns the stored row */
  insertAssistantOnce(conversationId: string, requestId: string, content: string, status: AnswerStatus, metadata: AnswerMetadata): Promise<{ message: { id: string }; created: boolean }>;
  /** marks the conversation as active now */
  touch(conversationId: string): Promise<void>;
}

export const ANSWER_STORE: InjectionToken<AnswerStore> = Symbol('ANSWER_STORE');
