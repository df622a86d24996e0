import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { DecidedCallDto, ToolCandidateDto } from './execute-tools.dto';

/**
 * The `data` of a `progress` event of POST /api/orchestration/execute/stream (for the OpenAPI
 * document). Which fields are present depends on `stage`.
 */
export class ExecuteProgressEventDto {
  @ApiProperty({ format: 'uuid' }) requestId: string;
  @ApiProperty({ description: '1, 2, 3… equal to the SSE id' }) seq: number;
  @ApiProperty({ enum: ['PrepareTools', 'LLMDecision', 'ExecuteTool', 'Finished'] }) stage: string;
  @ApiPropertyOptional({ type: [String], description: 'PrepareTools: the tools offered to the model' }) exposedTools?: string[];
  @ApiPropertyOptional({ type: [ToolCandidateDto], description: 'PrepareTools (NarrowTopK): the retrieved candidates' }) candidates?: ToolCandidateDto[];
  @ApiPropertyOptional({ type: [DecidedCallDto], description: 'LLMDecision: the calls the model decided' }) decidedCalls?: DecidedCallDto[];
  @ApiPropertyOptional({ description: 'ExecuteTool: position of the call, from 0' }) index?: number;
  @ApiPropertyOptional({ description: 'ExecuteTool' }) toolName?: string;
  @ApiPropertyOptional({ description: 'ExecuteTool: the tool outcome' }) outcome?: string;
  @ApiPropertyOptional({ description: 'ExecuteTool' }) latencyMs?: number;
  @ApiPropertyOptional({ description: 'Finished' }) isSuccess?: boolean;
  @ApiPropertyOptional({ nullable: true, type: String, description: 'Finished: the ToolCallsResult error code' }) error?: string | null;
  @ApiPropertyOptional({ description: 'Finished' }) totalLatencyMs?: number;
}
