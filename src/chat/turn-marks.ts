import type { ChatMessageEntity } from './entities/chat-message.entity';

/**
 * The marks an interrupt or a rollback (issue 33) leaves in a displaced turn's stored messages'
 * metadata (ConversationTurnRepository writes them): the turn that displaced it.
 */
interface TurnMarks {
  interruptedBy?: unknown;
  rolledBackBy?: unknown;
}

/** A rolled-back turn's messages: stored, but out of the history and the listing. */
export function rolledBack(m: Pick<ChatMessageEntity, 'metadata'>): boolean {
  return typeof (m.metadata as TurnMarks | null)?.rolledBackBy === 'string';
}

/** The turn that interrupted this answer; null when none did. */
export function interruptedBy(m: Pick<ChatMessageEntity, 'metadata'>): string | null {
  const by = (m.metadata as TurnMarks | null)?.interruptedBy;
  return typeof by === 'string' ? by : null;
}
