import { interruptedBy } from '../turn-marks';
import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import type { TurnStep } from '../../runs/answer-store.port';
import type { ChatMessageEntity } from '../entities/chat-message.entity';
import type { ConversationEntity } from '../entities/conversation.entity';

export class ChatMessageDto {
  @ApiProperty() id: string;
  @ApiProperty({ enum: ['user', 'assistant'] }) role: string;
  @ApiProperty() content: string;
  @ApiProperty({ enum: ['complete', 'cancelled', 'error'] }) status: string;
  @ApiProperty({ nullable: true, type: String }) requestId: string | null;
  @ApiProperty() createdAt: string;
  /** added (issue 13): how an assistant message's turn ended (`max_tokens`: cut off by the token limit); null for user messages */
  @ApiPropertyOptional({ nullable: true, type: String }) stopReason?: string | null;
  /** added (issue 13): the model that answered an assistant message; null for user messages and older answers */
  @ApiPropertyOptional({ nullable: true, type: String, description: 'the model that answered (assistant messages; null otherwise)' }) model?: string | null;
  /**
   * added (issue 13): what happened in an assistant message's turn, in order, as its stream
   * showed it; [] for user messages and for turns stored before steps were kept
   */
  @ApiPropertyOptional({
    type: 'array',
    items: { type: 'object', additionalProperties: true },
    description:
      'Steps of the turn in order: `{type: "tool", callId, name, status, arguments, outcome, isError, durationMs, message?, phaseIndex, textOffset}` (textOffset: how much of the answer had streamed when the call was named), `{type: "sources", data, sourceTypes, ragCount, webCount, confidence, metrics}`, `{type: "notice", code, message}`, `{type: "error", code, message}`, `{type: "phase", phase, phaseIndex, cycleIndex, endReason}`, `{type: "approval", approvalId, tool, callId, arguments, reason, expiresAt, status, decision, edited, by, decisionReason, phaseIndex}`',
  })
  steps?: TurnStep[];
  /** added (issue 13): the answer of a forked run names the run it was forked from; null otherwise */
  @ApiPropertyOptional({ nullable: true, type: String, format: 'uuid', description: 'the answer of a fork: the run it was forked from (whose answer is kept, earlier in the list)' })
  parentRequestId?: string | null;
  /** added (issue 33): an answer cut short by a message sent with `options.multitask: "interrupt"` names that message's turn; null otherwise */
  @ApiPropertyOptional({ nullable: true, type: String, format: 'uuid', description: 'an answer interrupted by a later message (options.multitask interrupt): that turn\'s requestId; null otherwise' })
  interruptedBy?: string | null;
}

export class ConversationDto {
  @ApiProperty() id: string;
  @ApiProperty() projectId: string;
  @ApiProperty() title: string;
  @ApiProperty({ type: Object }) settings: Record<string, unknown>;
  @ApiProperty() createdAt: string;
  @ApiProperty() updatedAt: string;
}

export function mapMessage(m: ChatMessageEntity): ChatMessageDto {
  const stopReason = m.role === 'assistant' && typeof m.metadata?.stopReason === 'string' ? m.metadata.stopReason : null;
  const steps = m.role === 'assistant' && Array.isArray(m.metadata?.steps) ? m.metadata.steps : [];
  const parentRequestId = m.role === 'assistant' && typeof m.metadata?.forkOf?.requestId === 'string' ? m.metadata.forkOf.requestId : null;
  const model = m.role === 'assistant' && typeof m.metadata?.model === 'string' ? m.metadata.model : null;
  return { id: m.id, role: m.role, content: m.content, status: m.status, requestId: m.requestId, createdAt: m.createdAt.toISOString(), stopReason, model, steps, parentRequestId, interruptedBy: m.role === 'assistant' ? interruptedBy(m) : null };
}

export function mapConversation(c: ConversationEntity): ConversationDto {
  return {
    id: c.id,
    projectId: c.projectId,
    title: c.title,
    settings: { ...(c.settings ?? {}) },
    createdAt: c.createdAt.toISOString(),
    updatedAt: c.updatedAt.toISOString(),
  };
}
