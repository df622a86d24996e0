import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { ArrayMaxSize, IsArray, IsIn, IsInt, IsNumber, IsObject, IsOptional, IsString, Matches, Max, MaxLength, Min, MinLength, ValidateNested } from 'class-validator';
import { PROJECT_ID_MESSAGE, PROJECT_ID_PATTERN } from '../../../common/workspace/project-id';
import { TOOL_MODES, type ToolMode } from '../tool-calls-result';
import { SUPPORTED_LOCALE } from '../tool-mode.prompts';

export class ExecuteToolsOptionsDto {
  @ApiPropertyOptional({ minimum: 1, maximum: 20, description: 'decided calls are cut to this many; default ORCHESTRATION_MAX_CALLS (1)' })
  @IsOptional() @IsInt() @Min(1) @Max(20)
  maxCalls?: number;

  @ApiPropertyOptional({ minimum: 1, maximum: 50, description: 'NarrowTopK: candidates shown to the model; default ORCHESTRATION_TOP_K (5)' })
  @IsOptional() @IsInt() @Min(1) @Max(50)
  narrowTopK?: number;

  @ApiPropertyOptional({ minimum: 0, maximum: 1, description: 'NarrowTopK: lowest absolute score (0..1) a candidate needs; default ORCHESTRATION_MIN_SCORE (0.23)' })
  @IsOptional() @IsNumber() @Min(0) @Max(1)
  minScoreThreshold?: number;

  @ApiPropertyOptional({ default: 'en', description: 'language of the fixed system prompt: en or zh (with optional region, e.g. zh-CN)' })
  @IsOptional() @IsString() @Matches(SUPPORTED_LOCALE, { message: 'locale must be en or zh (optionally with a region, e.g. zh-CN)' })
  locale?: string;
}

/** A call a person approved earlier (after an `approval_required` execution): it runs without waiting. */
export class ApprovedCallDto {
  @ApiProperty({ example: 'fs__write_file', description: 'the tool, as the execution named it' })
  @IsString() @Matches(/^[A-Za-z0-9_-]{1,64}$/, { message: 'tool must be a tool name (1-64 characters of A-Z, a-z, 0-9, _ or -)' })
  tool: string;

  @ApiProperty({ type: 'object', additionalProperties: true, example: { path: 'notes.txt', content: 'hi' }, description: 'the arguments approved, compared canonically (key order and defaults do not matter)' })
  @IsObject({ message: 'arguments must be a JSON object' })
  arguments: Record<string, unknown>;
}

/** The error code of a bad `mode` when it is the only bad field (docs/API.md, `unknown_mode`). */
const UNKNOWN_MODE = 'unknown_mode';
/** A sent value in a message: JSON, a long string cut at 80 characters. */
const shown = (v: unknown) => JSON.stringify(typeof v === 'string' && v.length > 80 ? `${v.slice(0, 80)}…` : v);

/** Body of POST /api/orchestration/execute(/stream). */
export class ExecuteToolsDto {
  @ApiProperty({ minLength: 1, maxLength: 8000, example: 'colony overview' })
  @IsString() @MinLength(1, { message: 'userInput must not be empty' }) @MaxLength(8000)
  userInput: string;

  @ApiPropertyOptional({ type: [String], example: ['pawn_1'], description: 'who the input is about; given to the model with the input' })
  @IsOptional() @IsArray() @ArrayMaxSize(100) @IsString({ each: true }) @MaxLength(128, { each: true })
  participantIds?: string[];

  @ApiPropertyOptional({ default: 'default' })
  @IsOptional() @Matches(PROJECT_ID_PATTERN, { message: PROJECT_ID_MESSAGE })
  projectId?: string;

  @ApiPropertyOptional({ enum: TOOL_MODES, description: 'required unless ORCHESTRATION_DEFAULT_MODE is set; never switched' })
  // an unknown name is one bad field among the others (issue #42); alone, its code is the
  // documented `unknown_mode` (the context below). A missing mode without a default is answered
  // by OrchestrationService, which knows ORCHESTRATION_DEFAULT_MODE
  @IsOptional()
  @IsString({ message: `mode must be one of: ${TOOL_MODES.join(', ')}`, context: { code: UNKNOWN_MODE } })
  @IsIn(TOOL_MODES, { message: (a) => `mode must be one of: ${TOOL_MODES.join(', ')} (got ${shown(a.value)})`, context: { code: UNKNOWN_MODE } })
  mode?: ToolMode;

  @ApiPropertyOptional({ type: ExecuteToolsOptionsDto })
  @IsOptional() @ValidateNested() @Type(() => ExecuteToolsOptionsDto)
  options?: ExecuteToolsOptionsDto;

  @ApiPropertyOptional({
    type: [ApprovedCallDto],
    maxItems: 20,
    description: 'calls a person approved earlier: a decided call with the same tool and canonical arguments runs without waiting (each entry once)',
  })
  @IsOptional() @IsArray() @ArrayMaxSize(20) @ValidateNested({ each: true }) @Type(() => ApprovedCallDto)
  approvedCalls?: ApprovedCallDto[];
}

export class ToolIndexSearchQueryDto {
  @ApiProperty({ minLength: 1, maxLength: 2000 })
  @IsString() @MinLength(1, { message: 'q must not be empty' }) @MaxLength(2000)
  q: string;

  @ApiPropertyOptional({ minimum: 1, maximum: 50, default: 5 })
  @IsOptional() @Type(() => Number) @IsInt() @Min(1) @Max(50)
  k?: number;

  @ApiPropertyOptional({ minimum: 0, maximum: 1, default: 0 })
  @IsOptional() @Type(() => Number) @IsNumber() @Min(0) @Max(1)
  minScore?: number;
}

export class DecidedCallDto {
  @ApiProperty() toolName: string;
  @ApiProperty({ description: 'parsed arguments (or the raw text when not a JSON object)' }) args: unknown;
}

export class ToolApprovalNeedDto {
  @ApiProperty() required: boolean;
  @ApiProperty({ example: 'destructive' }) reason: string;
}

export class ToolExecutionDto {
  @ApiProperty() toolName: string;
  @ApiProperty() args: unknown;
  @ApiProperty({ enum: ['success', 'validation_error', 'unavailable', 'rate_limited', 'timeout', 'exception', 'cancelled', 'approval_required', 'interrupted'], description: 'interrupted: a keyed execution continued after its instance died; this call was running then and is not read-only, so it was not run again (it may or may not have run)' }) outcome: string;
  @ApiProperty() resultObject: unknown;
  @ApiProperty() latencyMs: number;
  @ApiProperty({ description: 'true for every outcome but success' }) isError: boolean;
  @ApiPropertyOptional({ type: ToolApprovalNeedDto, description: 'outcome approval_required: why the call waits for a person (it did not run)' })
  approval?: ToolApprovalNeedDto;
}

export class ToolCandidateDto {
  @ApiProperty() name: string;
  @ApiProperty({ description: 'absolute 0..1: the same whatever the other candidates (docs/API.md, "Tool-only orchestration")' }) score: number;
}

export class ToolCallsResultDto {
  @ApiProperty({ enum: TOOL_MODES }) mode: string;
  @ApiProperty({ type: [String] }) exposedTools: string[];
  @ApiProperty({ type: [DecidedCallDto] }) decidedCalls: DecidedCallDto[];
  @ApiProperty({ type: [ToolExecutionDto] }) executions: ToolExecutionDto[];
  @ApiProperty() isSuccess: boolean;
  @ApiProperty({ nullable: true, enum: ['no_tool_calls', 'content_loop', 'invalid_args', 'narrow_topk_unavailable', 'no_candidates', 'llm_error', 'internal_error'] }) error: string | null;
  @ApiProperty() totalLatencyMs: number;
  @ApiProperty() requestId: string;
  @ApiPropertyOptional() errorMessage?: string;
  @ApiPropertyOptional({ type: [ToolCandidateDto] }) candidates?: ToolCandidateDto[];
}

export class ToolIndexHitDto {
  @ApiProperty() name: string;
  @ApiProperty() score: number;
  @ApiProperty() origin: string;
}
