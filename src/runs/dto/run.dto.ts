import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional, IsString, Matches } from 'class-validator';
import type { RunEntity } from '../entities/run.entity';

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

export function mapRun(r: RunEntity): RunDto {
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
    checkpoints: Object.keys(r.checkpoint?.byPhase ?? {}).map(Number).sort((a, b) => a - b),
    createdAt: r.createdAt.toISOString(),
    updatedAt: r.updatedAt.toISOString(),
  };
}

export class RunEventsQueryDto {
  @ApiPropertyOptional({ description: 'replay events with seq greater than this (the Last-Event-ID header wins)' })
  @IsOptional() @Matches(/^\d{1,9}$/, { message: 'lastEventId must be a non-negative integer' })
  lastEventId?: string;

  @ApiPropertyOptional({ description: 'API key for EventSource clients, which cannot send headers' })
  @IsOptional() @IsString()
  access_token?: string;
}
