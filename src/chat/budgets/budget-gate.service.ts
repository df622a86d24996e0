import { Injectable } from '@nestjs/common';
import { AppConfigService } from '../../config/app-config.service';
import type { PriceTable } from '../../llm/llm-prices';
import { ChatException, ChatExceptionCode } from '../chat.exception';
import { BudgetRepository, type BudgetRow, type Spent } from '../repositories/budget.repository';
import { periodEnd, periodStart } from './budget-period';

/** What an admitted send under a budget must run with: the turn budget its reservation covers. */
export interface Admission {
  turnTokenBudget: number;
}

/** A budget's name as messages say it. */
const named = (b: BudgetRow): string => (b.scope === 'project' ? `project ${b.scopeId}` : `key ${b.scopeId}`);

/**
 * Admits sends against their project's and key's budgets (docs/OPERATIONS.md, "Budgets"). A send
 * under a budget reserves its turn's worst case, its turn token budget (and that at the price
 * table's dearest rate for a cost budget), under the budget rows' locks, so no two concurrent
 * turns on any instance both take the last of a budget; the turn then runs with that turn
 * budget, so it can pass its reservation by at most its forced final call. When the run ends its
 * stored usage counts instead; a send refused later releases its reservation.
 */
@Injectable()
export class BudgetGate {
  constructor(
    private readonly budgets: BudgetRepository,
    private readonly config: AppConfigService,
  ) {}

  /** null: no budget applies (one indexed read). Throws 429 budget_exhausted, before anything is stored. */
  async admit(requestId: string, projectId: string, keyId: string | null, turnTokenBudget: number | undefined, prices: PriceTable): Promise<Admission | null> {
    const applying = await this.budgets.applying(projectId, keyId);
    if (applying.length === 0) return null;
    const tokens = turnTokenBudget || this.config.get('BUDGET_TURN_RESERVE_TOKENS');
    const cost = (tokens * dearestRate(prices)) / 1e6;
    const now = new Date();
    await this.budgets.locked(applying, async (m, current) => {
      for (const b of current) {
        const spent = await this.budgets.spent(b.scope, b.scopeId, periodStart(b.period, now), m);
        const over = exceeded(b, spent, tokens, cost);
        if (over) throw exhausted(b, over, spent, periodEnd(b.period, now), now);
      }
      await this.budgets.reserve({ requestId, projectId, keyId, tokens, cost }, m);
    });
    return { turnTokenBudget: tokens };
  }

  /** The send was refused after its admission: its reservation no longer holds anything. */
  release(requestId: string): Promise<void> {
    return this.budgets.release(requestId);
  }
}

/** The dearest price per million tokens in the table (0 without one: a cost budget then only counts what is priced). */
function dearestRate(prices: PriceTable): number {
  let max = 0;
  for (const p of prices.values()) max = Math.max(max, p.input, p.output, p.cached ?? 0);
  return max;
}

/** Which limit the reservation would pass, if any. */
function exceeded(b: BudgetRow, spent: Spent, tokens: number, cost: number): 'tokens' | 'cost' | null {
  if (b.tokens !== null && spent.tokens + tokens > b.tokens) return 'tokens';
  if (b.cost !== null && spent.cost + cost > b.cost) return 'cost';
  return null;
}

function exhausted(b: BudgetRow, over: 'tokens' | 'cost', spent: Spent, resetsAt: Date, now: Date): ChatException {
  const retryAfter = Math.max(1, Math.ceil((resetsAt.getTime() - now.getTime()) / 1000));
  const limit = over === 'tokens' ? b.tokens : b.cost;
  return new ChatException(
    ChatExceptionCode.BUDGET_EXHAUSTED,
    `The ${b.period === 'day' ? 'daily' : 'monthly'} ${over} budget of ${named(b)} (${limit}) is used up (${Math.round(spent[over] * 1e6) / 1e6} spent or reserved by running turns); it resets at ${resetsAt.toISOString()}. Nothing was stored`,
    { budget: { scope: b.scope, id: b.scopeId, period: b.period, limit: over, [over]: limit }, resetsAt: resetsAt.toISOString(), retryAfter },
  );
}
