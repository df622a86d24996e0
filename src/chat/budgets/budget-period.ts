import type { BudgetPeriod } from '../repositories/budget.repository';

/** The start of the budget period `at` falls in (UTC): the day's midnight, or the month's first. */
export function periodStart(period: BudgetPeriod, at: Date): Date {
  return period === 'day' ? new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), at.getUTCDate())) : new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), 1));
}

/** When the period `at` falls in ends and the budget is whole again (UTC). */
export function periodEnd(period: BudgetPeriod, at: Date): Date {
  return period === 'day' ? new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), at.getUTCDate() + 1)) : new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth() + 1, 1));
}
