/**
 * How long an instance trusts what it last read about whether a project or key has a budget. A
 * budget set or removed through this instance counts at once; through another instance, within
 * this long (docs/OPERATIONS.md, "Budgets"). Short, so a new budget soon binds everywhere; long
 * enough that a busy project's sends without a budget read nothing.
 */
export const BUDGET_PRESENCE_TTL_MS = 5_000;

/** Past this many remembered ids the memory starts over, so many projects or keys cannot grow it without bound. */
const MAX_ENTRIES = 10_000;

/**
 * Whether a project or a key has a budget, as last read, for BUDGET_PRESENCE_TTL_MS: sends
 * without a budget then skip the database. Only the yes/no is remembered; a send whose project or
 * key has a budget reads and locks the budget's row as it is now.
 */
export class BudgetPresence {
  private readonly seen = new Map<string, { has: boolean; until: number }>();

  constructor(private readonly ttlMs = BUDGET_PRESENCE_TTL_MS) {}

  /** true / false while remembered, undefined when the database must be asked. */
  has(scope: 'project' | 'key', id: string, now = Date.now()): boolean | undefined {
    const e = this.seen.get(`${scope}:${id}`);
    return e && e.until > now ? e.has : undefined;
  }

  note(scope: 'project' | 'key', id: string, has: boolean, now = Date.now()): void {
    if (this.seen.size >= MAX_ENTRIES) this.seen.clear();
    this.seen.set(`${scope}:${id}`, { has, until: now + this.ttlMs });
  }

  /** A budget was set or removed here: it counts from the next send. */
  forget(scope: 'project' | 'key', id: string): void {
    this.seen.delete(`${scope}:${id}`);
  }
}
