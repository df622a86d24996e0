import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import type { ChatMessageEntity } from '../entities/chat-message.entity';
import type { ConversationEntity } from '../entities/conversation.entity';
import type { RunEntity } from '../entities/run.entity';

export class ChatMessageDto {
  @ApiProperty() id: string;
  @ApiProperty({ enum: ['user', 'assistant'] }) role: string;
  @ApiProperty() content: string;
  @ApiProperty({ enum: ['complete', 'cancelled', 'error'] }) status: string;
  @ApiProperty({ nullable: true, type: String }) requestId: string | null;
  @ApiProperty() createdAt: string;
}

export class ConversationDto {
  @ApiProperty() id: string;
  @ApiProperty() projectId: string;
  @ApiProperty() title: string;
  @ApiProperty({ type: Object }) settings: Record<string, unknown>;
  @ApiProperty() createdAt: string;
  @ApiProperty() updatedAt: string;
}

export class RunDto {
  @ApiProperty() requestId: string;
  @ApiProperty({ enum: ['running', 'paused', 'completed', 'cancelled', 'failed'] }) status: string;
  @ApiProperty() protocol: string;
  @ApiProperty() phaseIndex: number;
  @ApiProperty() cycleIndex: number;
  @ApiProperty() conversationId: string;
  @ApiProperty() projectId: string;
  @ApiProperty() lastSeq: number;
  @ApiPropertyOptional({ nullable: true, type: String }) stopReason: string | null;
  @ApiPropertyOptional({ nullable: true, type: String }) control: string | null;
  @ApiProperty({ type: [Number], description: 'phase indexes a resume may start from' }) checkpoints: number[];
  @ApiProperty() createdAt: string;
  @ApiProperty() updatedAt: string;
}

export function mapMessage(m: ChatMessageEntity): ChatMessageDto {
  return { id: m.id, role: m.role, content: m.content, status: m.status, requestId: m.requestId, createdAt: m.createdAt.toISOString() };
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

export function mapRun(r: RunEntity): RunDto {
  const byPhase = (r.checkpoint as { byPhase?: Record<string, unknown> } | null)?.byPhase ?? {};
  return {
    requestId: r.requestId,
    status: r.status,
    protocol: r.protocol,
    phaseIndex: r.phaseIndex,
    cycleIndex: r.cycleIndex,
    conversationId: r.conversationId,
    projectId: r.projectId,
    lastSeq: r.lastSeq,
    stopReason: r.stopReason,
    control: r.control,
    checkpoints: Object.keys(byPhase).map(Number).sort((a, b) => a - b),
    createdAt: r.createdAt.toISOString(),
    updatedAt: r.updatedAt.toISOString(),
  };
}
