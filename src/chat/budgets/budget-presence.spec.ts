import { BudgetPresence } from './budget-presence';

describe('BudgetPresence', () => {
  it('remembers whether a project or key has a budget for its TTL, then asks again', () => {
    const p = new BudgetPresence(5_000);
    p.note('project', 'p1', false, 1_000);
    p.note('key', 'k1', true, 1_000);
    expect(p.has('project', 'p1', 5_999)).toBe(false);
    expect(p.has('key', 'k1', 5_999)).toBe(true);
    expect(p.has('project', 'p1', 6_000)).toBeUndefined();
    expect(p.has('key', 'p1', 1_000)).toBeUndefined();
  });

  it('a budget set or removed on this instance is asked about again at once', () => {
    const p = new BudgetPresence(5_000);
    p.note('project', 'p1', false, 1_000);
    p.forget('project', 'p1');
    expect(p.has('project', 'p1', 1_001)).toBeUndefined();
  });
});
