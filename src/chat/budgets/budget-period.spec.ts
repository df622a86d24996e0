import { periodEnd, periodStart } from './budget-period';

describe('budget periods (UTC)', () => {
  const at = new Date('2026-12-31T23:59:30.000Z');

  it('a day runs from midnight to midnight', () => {
    expect(periodStart('day', at).toISOString()).toBe('2026-12-31T00:00:00.000Z');
    expect(periodEnd('day', at).toISOString()).toBe('2027-01-01T00:00:00.000Z');
  });

  it('a month from its first to the next first, across a year end', () => {
    expect(periodStart('month', at).toISOString()).toBe('2026-12-01T00:00:00.000Z');
    expect(periodEnd('month', at).toISOString()).toBe('2027-01-01T00:00:00.000Z');
    expect(periodEnd('month', new Date('2026-02-10T00:00:00Z')).toISOString()).toBe('2026-03-01T00:00:00.000Z');
  });
});
