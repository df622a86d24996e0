import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional, IsString, Matches } from 'class-validator';
import type { RunEntity } from '../entities/run.entity';

export class RunDto {
  @ApiProperty() requestId: string;
  @ApiProperty({ enum: ['running', 'awaiting_approval', 'paused', 'completed', 'cancelled', 'failed'], description: '*(added)* `awaiting_approval`: running, waiting for a person\'s decision on a tool call' })
  status: string;
  @ApiProperty() protocol: string;
  @ApiProperty() phaseIndex: number;
  @ApiProperty() cycleIndex: number;
  @ApiProperty() conversationId: string;
  @ApiProperty() projectId: string;
  @ApiProperty() lastSeq: number;
  @ApiPropertyOptional({ nullable: true, type: String }) stopReason: string | null;
  @ApiPropertyOptional({ nullable: true, type: String }) control: string | null;
  @ApiProperty({ type: [Number], description: 'phase indexes a resume may start from' }) checkpoints: number[];
  @ApiProperty({ nullable: true, type: String, format: 'uuid', description: 'added: the run this one was forked from (a resume from an older checkpoint); null for an original run' })
  parentRequestId: string | null;
  @ApiProperty({ nullable: true, type: Number, description: 'added: the parent\'s checkpoint a fork continues from; null for an original run' })
  forkedFromPhaseIndex: number | null;
  @ApiProperty({ type: () => [RunForkDto], description: 'added: the runs forked from this one, oldest first' })
  forks: RunForkDto[];
  @ApiProperty({ nullable: true, type: Object, description: 'added (issue 46): the ended turn\'s usage as in `done` (tokens, `estimated`, `cost` from LLM_PRICES); null while it runs' })
  usage: Record<string, unknown> | null;
  @ApiProperty() createdAt: string;
  @ApiProperty() updatedAt: string;
}

export class RunForkDto {
  @ApiProperty({ format: 'uuid' }) requestId: string;
  @ApiProperty({ description: 'the checkpoint of this run the fork continues from' }) fromPhaseIndex: number;
}

export function mapRun(r: RunEntity, forks: RunForkDto[] = []): RunDto {
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
    // the turn's start (phase 0, issue 44) is only for a takeover: no resume or fork names it
    checkpoints: Object.keys(r.checkpoint?.byPhase ?? {}).map(Number).filter((n) => n > 0).sort((a, b) => a - b),
    parentRequestId: r.parentRequestId ?? null,
    forkedFromPhaseIndex: r.forkedFromPhaseIndex ?? null,
    forks,
    usage: r.usage ?? null,
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
