import { Injectable, Logger, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import { WebhookOutboxRepository } from '../../webhooks/repositories/webhook-outbox.repository';
import { AppConfigService } from '../../config/app-config.service';
import type { PriceTable } from '../../llm/llm-prices';
import { ChatException, ChatExceptionCode } from '../chat.exception';
import { BudgetRepository, type BudgetRow, type Spent } from '../repositories/budget.repository';
import { periodEnd, periodStart } from './budget-period';

/** What an admitted send under a budget must run with: the turn budget its reservation covers. */
export interface Admission {
  turnTokenBudget: number;
}

/** How often an instance looks for reservations whose run was never stored. */
const LAPSE_EVERY_MS = 60_000;

/** A budget's name as messages say it. */
const named = (b: BudgetRow): string => (b.scope === 'project' ? `project ${b.scopeId}` : `key ${b.scopeId}`);

/**
 * Admits sends against their project's and key's budgets (docs/OPERATIONS.md, "Budgets"). A send
 * under a budget reserves its turn's worst case, its turn token budget (and that at the price
 * table's dearest rate for a cost budget), under the budget rows' locks (BudgetRepository.admit), so no two concurrent
 * turns on any instance both take the last of a budget; the turn then runs with that turn
 * budget, so it can pass its reservation by at most its forced final call. When the run ends its
 * stored usage counts instead; a send refused later releases its reservation.
 */
@Injectable()
export class BudgetGate implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('Budgets');
  private timer?: NodeJS.Timeout;

  constructor(
    private readonly budgets: BudgetRepository,
    private readonly config: AppConfigService,
    private readonly outbox: WebhookOutboxRepository,
  ) {}

  /** Reservations whose run was never stored lapse (BudgetRepository.lapseOrphans), checked once a minute on every instance. */
  onApplicationBootstrap(): void {
    this.timer = setInterval(() => void this.lapse(), LAPSE_EVERY_MS);
    this.timer.unref?.();
  }

  onApplicationShutdown(): void {
    if (this.timer) clearInterval(this.timer);
  }

  /** One pass; never throws (the next one retries). */
  async lapse(): Promise<number> {
    try {
      return await this.budgets.lapseOrphans();
    } catch (e) {
      this.logger.warn(`could not lapse orphaned budget reservations: ${(e as Error).message}`);
      return 0;
    }
  }

  /**
   * null: no budget applies (BudgetRepository.mayApply: such a send usually reads nothing).
   * Throws 429 budget_exhausted, before anything is stored.
   */
  async admit(requestId: string, projectId: string, keyId: string | null, turnTokenBudget: number | undefined, prices: PriceTable): Promise<Admission | null> {
    if (!(await this.budgets.mayApply(projectId, keyId))) return null;
    const { tokens, cost } = turnReservation(turnTokenBudget || this.config.get('BUDGET_TURN_RESERVE_TOKENS'), prices);
    const now = new Date();
    const found = await this.budgets.admit(projectId, keyId, { requestId, tokens, cost }, now);
    if (found.budgets.length === 0) return null;
    if (!found.inserted) {
      // the statement's own test refused it; name the first budget it does not fit
      const refused = found.budgets.find(({ b, spent }) => exceeded(b, spent, tokens, cost)) ?? found.budgets[0];
      const over = exceeded(refused.b, refused.spent, tokens, cost) ?? 'tokens';
      this.announce('budget.reached', refused.b, refused.spent, now);
      throw exhausted(refused.b, over, refused.spent, { tokens, cost }, periodEnd(refused.b.period, now), now);
    }
    for (const { b, spent } of found.budgets) {
      const held = { tokens: spent.tokens + tokens, cost: spent.cost + cost };
      if (pastWarning(b, held)) this.announce('budget.warning', b, held, now);
    }
    return { turnTokenBudget: tokens };
  }

  /**
   * A project budget's webhook (its project's default URL), once per budget, event and period;
   * after the admission's transaction, so a slow outbox never holds the budget's lock. A key's
   * budget has no project to announce to.
   */
  private announce(type: 'budget.reached' | 'budget.warning', b: BudgetRow, spent: Spent, now: Date): void {
    if (b.scope !== 'project') return;
    const start = periodStart(b.period, now).toISOString();
    const details = { scope: b.scope, id: b.scopeId, period: b.period, tokens: b.tokens, cost: b.cost, warnAt: b.warnAt, spent: { tokens: spent.tokens, cost: roundCost(spent.cost) }, periodStart: start, resetsAt: periodEnd(b.period, now).toISOString() };
    this.outbox.announceProject(b.scopeId, type, details, `${type}:${b.scope}:${b.scopeId}:${start}`).catch((e: unknown) => this.logger.warn(`could not announce ${type} of ${named(b)}: ${(e as Error).message}`));
  }

  /** The send was refused after its admission: its reservation no longer holds anything. */
  release(requestId: string): Promise<void> {
    return this.budgets.release(requestId);
  }
}

/** What a send under a budget reserves: its turn token budget, and that at the dearest price in the table. */
export function turnReservation(tokens: number, prices: PriceTable): Spent {
  return { tokens, cost: (tokens * dearestRate(prices)) / 1e6 };
}

/** Cost figures as they are shown: to the millionth, without float noise such as 0.30000000000000004. */
export function roundCost(n: number): number {
  return Math.round(n * 1e6) / 1e6;
}

/** The dearest price per million tokens in the table (0 without one: a cost budget then only counts what is priced). */
function dearestRate(prices: PriceTable): number {
  let max = 0;
  for (const p of prices.values()) max = Math.max(max, p.input, p.output, p.cached ?? 0);
  return max;
}

/** Whether what the period holds with this turn's reservation is past the budget's warning share of a limit. */
function pastWarning(b: BudgetRow, held: Spent): boolean {
  if (b.warnAt === null) return false;
  return (b.tokens !== null && held.tokens >= b.warnAt * b.tokens) || (b.cost !== null && held.cost >= b.warnAt * b.cost);
}

/** Which limit the reservation would pass, if any. */
function exceeded(b: BudgetRow, spent: Spent, tokens: number, cost: number): 'tokens' | 'cost' | null {
  if (b.tokens !== null && spent.tokens + tokens > b.tokens) return 'tokens';
  if (b.cost !== null && spent.cost + cost > b.cost) return 'cost';
  return null;
}

/**
 * The refusal names what the client can act on: how much of the budget is left against this
 * turn's reservation, or, when the reservation alone is larger than the budget, that no turn can
 * fit until the turn's budget or the limit changes (waiting for the reset would not help).
 */
function exhausted(b: BudgetRow, over: 'tokens' | 'cost', spent: Spent, reserved: Spent, resetsAt: Date, now: Date): ChatException {
  const limit = (over === 'tokens' ? b.tokens : b.cost) as number;
  const round = roundCost;
  // no turn fits until the turn's budget or the limit changes: waiting for the reset would not help, so no Retry-After
  const retryAfter = reserved[over] > limit ? undefined : Math.max(1, Math.ceil((resetsAt.getTime() - now.getTime()) / 1000));
  const budget = `${b.period === 'day' ? 'daily' : 'monthly'} ${over} budget of ${named(b)} (${limit})`;
  const reservation = `this turn's reservation of ${round(reserved[over])} ${over} (options.turnTokenBudget, else TURN_TOKEN_BUDGET, else BUDGET_TURN_RESERVE_TOKENS)`;
  const message =
    reserved[over] > limit
      ? `The ${budget} is smaller than ${reservation}: no turn fits it; lower the turn's budget or raise the limit. Nothing was stored`
      : `The ${budget} has ${round(Math.max(0, limit - spent[over]))} left (${round(spent[over])} spent or reserved by running turns), less than ${reservation}; it resets at ${resetsAt.toISOString()}. Nothing was stored`;
  return new ChatException(ChatExceptionCode.BUDGET_EXHAUSTED, message, {
    budget: { scope: b.scope, id: b.scopeId, period: b.period, limit: over, [over]: limit },
    reserved: round(reserved[over]),
    resetsAt: resetsAt.toISOString(),
    ...(retryAfter !== undefined ? { retryAfter } : {}),
  });
}
