import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsInt, IsISO8601, IsNumber, IsOptional, Matches, Max, Min, ValidateIf } from 'class-validator';

/** Body of PUT /api/admin/projects/:projectId/budget and PUT /api/admin/keys/:keyId/budget (issue 46). */
export class PutBudgetDto {
  @ApiProperty({ enum: ['day', 'month'], example: 'month', description: 'the budget is whole again at each UTC midnight (day) or first of the month (month)' })
  @IsIn(['day', 'month'], { message: 'period must be "day" or "month"' })
  period: 'day' | 'month';

  @ApiPropertyOptional({ type: Number, nullable: true, example: 2_000_000, description: 'tokens (prompt + completion) per period; omitted or null: no token limit' })
  @IsOptional() @ValidateIf((_, v) => v !== null) @IsInt({ message: 'tokens must be a whole number of tokens' }) @Min(1, { message: 'tokens must be at least 1' }) @Max(1e15)
  tokens?: number | null;

  @ApiPropertyOptional({ type: Number, nullable: true, example: 25, description: 'cost per period, in the currency of LLM_PRICES; omitted or null: no cost limit' })
  @IsOptional() @ValidateIf((_, v) => v !== null) @IsNumber({ allowNaN: false, allowInfinity: false }, { message: 'cost must be a number' }) @Min(0.000001, { message: 'cost must be more than 0' }) @Max(1e12)
  cost?: number | null;

  @ApiPropertyOptional({ type: Number, nullable: true, example: 0.8, description: 'the share of a limit at which the budget reports `warning` (0 < warnAt < 1)' })
  @IsOptional() @ValidateIf((_, v) => v !== null) @IsNumber({ allowNaN: false, allowInfinity: false }, { message: 'warnAt must be a number from 0.01 to 0.99' })
  @Min(0.01, { message: 'warnAt must be a number from 0.01 to 0.99' }) @Max(0.99, { message: 'warnAt must be a number from 0.01 to 0.99' })
  warnAt?: number | null;
}

export class BudgetKeyParamDto {
  @Matches(/^[A-Za-z0-9_.:-]{1,128}$/, { message: 'keyId must be a key id (1-128 characters of A-Z, a-z, 0-9, _ . : -)' })
  keyId: string;
}

export class BudgetSpentDto {
  @ApiProperty({ description: 'tokens of the period\'s ended runs plus the reservations of its running turns' }) tokens: number;
  @ApiProperty() cost: number;
}

export class BudgetDto {
  @ApiProperty({ enum: ['project', 'key'] }) scope: string;
  @ApiProperty({ description: 'the project id or key id' }) id: string;
  @ApiProperty({ enum: ['day', 'month'] }) period: string;
  @ApiProperty({ type: Number, nullable: true }) tokens: number | null;
  @ApiProperty({ type: Number, nullable: true }) cost: number | null;
  @ApiProperty({ type: Number, nullable: true }) warnAt: number | null;
  @ApiProperty({ type: BudgetSpentDto, description: 'what the current period has used' }) spent: BudgetSpentDto;
  @ApiProperty({ enum: ['ok', 'warning', 'reached'], description: "reached: what is left no longer holds a turn's default reservation (TURN_TOKEN_BUDGET, else BUDGET_TURN_RESERVE_TOKENS), so sends get 429 budget_exhausted; warning: past warnAt of a limit" }) state: string;
  @ApiProperty({ format: 'date-time', description: 'when the current period ends (UTC)' }) resetsAt: string;
  @ApiProperty({ format: 'date-time' }) updatedAt: string;
}

/** Query of GET /api/admin/projects/:projectId/usage. */
export class UsageQueryDto {
  @ApiPropertyOptional({ format: 'date-time', description: 'runs started at or after; default: the start of the current UTC month' })
  @IsOptional() @IsISO8601({ strict: true }, { message: 'from must be an RFC 3339 date-time' })
  from?: string;

  @ApiPropertyOptional({ format: 'date-time', description: 'runs started before; default: now' })
  @IsOptional() @IsISO8601({ strict: true }, { message: 'to must be an RFC 3339 date-time' })
  to?: string;

  @ApiPropertyOptional({ enum: ['day', 'model', 'key'], description: 'totals per UTC day, per model or per API key as well' })
  @IsOptional() @IsIn(['day', 'model', 'key'], { message: 'groupBy must be day, model or key' })
  groupBy?: 'day' | 'model' | 'key';
}

export class UsageTotalsDto {
  @ApiProperty({ description: 'tokens (prompt + completion) of the ended runs' }) tokens: number;
  @ApiProperty({ description: 'their cost from LLM_PRICES (0 for unpriced models)' }) cost: number;
  @ApiProperty({ description: 'ended runs that called a model at least once (a run refused or ended before any model call is not a turn)' }) turns: number;
}

export class UsageGroupDto extends UsageTotalsDto {
  @ApiProperty({ type: String, nullable: true, description: 'the day (YYYY-MM-DD, UTC), model or key id; null: runs without one (e.g. sent before keys were recorded)' }) group: string | null;
}

export class UsageReportDto {
  @ApiProperty() projectId: string;
  @ApiProperty({ format: 'date-time' }) from: string;
  @ApiProperty({ format: 'date-time' }) to: string;
  @ApiProperty({ type: String, nullable: true, enum: ['day', 'model', 'key'] }) groupBy: string | null;
  @ApiProperty({ type: UsageTotalsDto }) totals: UsageTotalsDto;
  @ApiProperty({ type: [UsageGroupDto], description: 'with groupBy: the totals per group, in order of the group' }) groups: UsageGroupDto[];
}
