import type { InjectionToken } from '@nestjs/common';

export type AnswerStatus = 'complete' | 'cancelled' | 'error';

/**
 * Where a run's answer is kept: the conversation's assistant message. Implemented by the chat
 * module (which owns conversations) and handed to RunsModule.register, so the run engine does
 * not import the layer above it.
 */
export interface AnswerStore {
  /** stores the assistant message of a turn exactly once per requestId; returns the stored row */
  insertAssistantOnce(conversationId: string, requestId: string, content: string, status: AnswerStatus, metadata: Record<string, unknown>): Promise<{ message: { id: string }; created: boolean }>;
  /** marks the conversation as active now */
  touch(conversationId: string): Promise<void>;
}

export const ANSWER_STORE: InjectionToken<AnswerStore> = Symbol('ANSWER_STORE');
