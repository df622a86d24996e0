import { BadRequestException, Body, Controller, Delete, Get, HttpCode, Param, Put } from '@nestjs/common';
import { ApiBadRequestResponse, ApiForbiddenResponse, ApiNoContentResponse, ApiNotFoundResponse, ApiOkResponse, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import { AdminOnly } from '../common/auth/admin-only.decorator';
import { periodEnd } from '../chat/budgets/budget-period';
import { roundCost, turnReservation } from '../chat/budgets/budget-gate.service';
import { AppConfigService } from '../config/app-config.service';
import { BudgetRepository, type BudgetRow, type BudgetScope, type Spent } from '../chat/repositories/budget.repository';
import { ChatException, ChatExceptionCode } from '../chat/chat.exception';
import { OrchestrationService } from '../orchestration/orchestration.service';
import { WebhookProjectParamDto } from '../webhooks/dto/webhook.dto';
import { BudgetDto, BudgetKeyParamDto, PutBudgetDto } from './budgets.dto';

/** 404 budget_not_found, coded like the project's other refusals (docs/API.md, errors). */
const notFound = (scope: BudgetScope, id: string) => new ChatException(ChatExceptionCode.BUDGET_NOT_FOUND, `No budget is set for ${scope} ${id}`, { scope, id });

/** The budget routes of one scope: GET, PUT and DELETE over the budgets table. */
class BudgetRoutes {
  constructor(
    private readonly budgets: BudgetRepository,
    private readonly orchestration: OrchestrationService,
    private readonly scope: BudgetScope,
    private readonly config: AppConfigService,
  ) {}

  async get(id: string): Promise<BudgetDto> {
    const row = await this.budgets.find(this.scope, id);
    if (!row) throw notFound(this.scope, id);
    return this.view(row);
  }

  async put(id: string, dto: PutBudgetDto): Promise<BudgetDto> {
    if ((dto.tokens ?? null) === null && (dto.cost ?? null) === null) throw new BadRequestException('tokens or cost must be given (a budget with neither limits nothing); nothing was stored');
    if ((dto.cost ?? null) !== null) this.refuseUnpriced();
    return this.view(await this.budgets.put({ scope: this.scope, scopeId: id, period: dto.period, tokens: dto.tokens ?? null, cost: dto.cost ?? null, warnAt: dto.warnAt ?? null }));
  }

  async remove(id: string): Promise<void> {
    if (!(await this.budgets.remove(this.scope, id))) throw notFound(this.scope, id);
  }

  /**
   * A cost budget counts turns at LLM_PRICES: with no configured model priced, every turn would
   * cost nothing and the budget would never bind, so it is refused rather than stored as a
   * limit that cannot hold. Some models priced is accepted (the unpriced ones count at nothing,
   * docs/OPERATIONS.md, "Budgets").
   */
  private refuseUnpriced(): void {
    const models = this.orchestration.modelNames();
    const prices = this.orchestration.prices();
    if (models.some((m) => prices.has(m))) return;
    throw new ChatException(
      ChatExceptionCode.BUDGET_COST_UNPRICED,
      `A cost budget needs prices: LLM_PRICES has none for the configured models (${models.join(', ')}), so every turn would cost 0 and the budget would never bind. Set LLM_PRICES, or give a tokens budget instead; nothing was stored`,
      { models: [...models] },
    );
  }

  private view(b: BudgetRow & { spent: Spent }): BudgetDto {
    const now = new Date();
    const spent = b.spent;
    const shares = [b.tokens !== null ? spent.tokens / b.tokens : 0, b.cost !== null ? spent.cost / b.cost : 0];
    const top = Math.max(...shares);
    // reached as soon as a send with the default turn reservation is refused, not only once the last token is spent
    const r = turnReservation(this.config.get('TURN_TOKEN_BUDGET') || this.config.get('BUDGET_TURN_RESERVE_TOKENS'), this.orchestration.prices());
    const refused = (b.tokens !== null && spent.tokens + r.tokens > b.tokens) || (b.cost !== null && spent.cost + r.cost > b.cost);
    const state = top >= 1 || refused ? 'reached' : b.warnAt !== null && top >= b.warnAt ? 'warning' : 'ok';
    return {
      scope: b.scope,
      id: b.scopeId,
      period: b.period,
      tokens: b.tokens,
      cost: b.cost,
      warnAt: b.warnAt,
      spent: { tokens: spent.tokens, cost: roundCost(spent.cost) },
      state,
      resetsAt: periodEnd(b.period, now).toISOString(),
      updatedAt: b.updatedAt.toISOString(),
    };
  }
}

const PUT_SUMMARY = 'Set the budget (tokens and/or cost per UTC day or month); a send past it is refused with 429 budget_exhausted';
const BAD_PUT = 'invalid id, or a body whose period is not day or month, whose tokens/cost/warnAt is out of range, or with neither tokens nor cost; budget_cost_unpriced: a cost limit while LLM_PRICES prices none of the configured models (nothing is stored)';

/** A project's budget (issue 46; docs/API.md, "Budgets and usage"). */
@ApiTags('admin')
@AdminOnly()
@ApiForbiddenResponse({ description: 'the key is not an admin key for every project' })
@ApiParam({ name: 'projectId', description: 'the project' })
@Controller('api/admin/projects/:projectId/budget')
export class ProjectBudgetController {
  private readonly routes: BudgetRoutes;
  constructor(budgets: BudgetRepository, orchestration: OrchestrationService, config: AppConfigService) {
    this.routes = new BudgetRoutes(budgets, orchestration, 'project', config);
  }

  @Get()
  @ApiOperation({ operationId: 'getProjectBudget', summary: "The project's budget and what its current period has used" })
  @ApiOkResponse({ type: BudgetDto })
  @ApiNotFoundResponse({ description: 'budget_not_found: the project has no budget' })
  get(@Param() { projectId }: WebhookProjectParamDto): Promise<BudgetDto> {
    return this.routes.get(projectId);
  }

  @Put()
  @ApiOperation({ operationId: 'putProjectBudget', summary: PUT_SUMMARY })
  @ApiOkResponse({ type: BudgetDto })
  @ApiBadRequestResponse({ description: BAD_PUT })
  put(@Param() { projectId }: WebhookProjectParamDto, @Body() dto: PutBudgetDto): Promise<BudgetDto> {
    return this.routes.put(projectId, dto);
  }

  @Delete()
  @HttpCode(204)
  @ApiOperation({ operationId: 'deleteProjectBudget', summary: "Remove the project's budget" })
  @ApiNoContentResponse({ description: 'removed' })
  @ApiNotFoundResponse({ description: 'budget_not_found: the project has no budget' })
  remove(@Param() { projectId }: WebhookProjectParamDto): Promise<void> {
    return this.routes.remove(projectId);
  }
}

/** An API key's budget, over every project the key sends to (issue 46). */
@ApiTags('admin')
@AdminOnly()
@ApiForbiddenResponse({ description: 'the key is not an admin key for every project' })
@ApiParam({ name: 'keyId', example: 'local', description: 'the key id (as GET /api/admin/keys lists it; `local` without keys)' })
@Controller('api/admin/keys/:keyId/budget')
export class KeyBudgetController {
  private readonly routes: BudgetRoutes;
  constructor(budgets: BudgetRepository, orchestration: OrchestrationService, config: AppConfigService) {
    this.routes = new BudgetRoutes(budgets, orchestration, 'key', config);
  }

  @Get()
  @ApiOperation({ operationId: 'getKeyBudget', summary: "The key's budget and what its current period has used" })
  @ApiOkResponse({ type: BudgetDto })
  @ApiNotFoundResponse({ description: 'budget_not_found: the key has no budget' })
  get(@Param() { keyId }: BudgetKeyParamDto): Promise<BudgetDto> {
    return this.routes.get(keyId);
  }

  @Put()
  @ApiOperation({ operationId: 'putKeyBudget', summary: PUT_SUMMARY })
  @ApiOkResponse({ type: BudgetDto })
  @ApiBadRequestResponse({ description: BAD_PUT })
  put(@Param() { keyId }: BudgetKeyParamDto, @Body() dto: PutBudgetDto): Promise<BudgetDto> {
    return this.routes.put(keyId, dto);
  }

  @Delete()
  @HttpCode(204)
  @ApiOperation({ operationId: 'deleteKeyBudget', summary: "Remove the key's budget" })
  @ApiNoContentResponse({ description: 'removed' })
  @ApiNotFoundResponse({ description: 'budget_not_found: the key has no budget' })
  remove(@Param() { keyId }: BudgetKeyParamDto): Promise<void> {
    return this.routes.remove(keyId);
  }
}
