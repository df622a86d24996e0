import { ToolIndex, type IndexableTool } from './tool-index';
import { distinctTasks, searchMultiIntent } from './multi-intent-search';

const tool = (name: string, description: string): IndexableTool => ({ name, description, parameters: { type: 'object', properties: {} }, origin: 'mcp:test' });

/** Interest tools crowd out the transfer in the whole-request ranking of a two-task request. */
function catalog(): ToolIndex {
  const index = new ToolIndex();
  for (const t of [
    tool('bank_account.transfer', 'Transfer money between two accounts of a bank customer'),
    tool('bank_account.calculate_interest', 'Calculate the interest earned on a bank account balance over years at an annual rate'),
    tool('compound_interest', 'Calculate compound interest for a principal, annual interest rate and number of years'),
    tool('calculate_roi', 'Calculate the return on investment over years at an annual rate'),
    tool('loan_interest', 'Calculate the interest of a loan at an annual interest rate'),
    tool('savings_goal', 'Years needed to reach a savings goal at an annual interest rate'),
    tool('convert_currency', 'Convert an amount of money from one currency to another'),
  ])
    index.add(t);
  return index;
}

describe('searchMultiIntent', () => {
  const request = 'Transfer $5000 from my checking to saving account. And calculate my potential interest after 5 years if the annual interest rate is 3%.';

  it('brings every task’s best tool into the top k where the whole request alone misses some', () => {
    const index = catalog();
    const whole = index.search(request, 2).map((h) => h.name);
    expect(whole).not.toContain('bank_account.transfer');
    const { hits, intents } = searchMultiIntent(index, request, 2);
    expect(intents).toHaveLength(2);
    const names = hits.map((h) => h.name);
    expect(names[0]).toBe(whole[0]);
    expect(names).toContain('bank_account.transfer');
    expect(names).toHaveLength(2);
  });

  it('ranks a single-intent request exactly as the plain search does', () => {
    const index = catalog();
    const q = 'What interest does my savings account earn at an annual rate of 3%?';
    expect(searchMultiIntent(index, q, 5)).toEqual({ hits: index.search(q, 5), intents: [q] });
  });

  it('honours minScore and filter in every list', () => {
    const index = catalog();
    const filtered = searchMultiIntent(index, request, 7, 0, (n) => n !== 'bank_account.transfer').hits;
    expect(filtered.length).toBeGreaterThan(0);
    expect(filtered.map((h) => h.name)).not.toContain('bank_account.transfer');
    const all = searchMultiIntent(index, request, 7).hits;
    const strict = searchMultiIntent(index, request, 7, 0.6).hits;
    expect(strict.length).toBeGreaterThan(0);
    expect(strict.length).toBeLessThan(all.length);
    expect(strict.every((h) => h.score >= 0.6)).toBe(true);
  });
});

describe('distinctTasks', () => {
  it('merges intents that repeat one task with other arguments and drops word-less and about-the-request ones', () => {
    expect(
      distinctTasks(['Can you help me with two tasks?', 'Calculate the travel time of a car moving at 50 m/s', 'calculate the travel time of a bullet moving at 400 m/s', 'Thanks!', 'convert 20 euros to dollars']),
    ).toEqual(['Calculate the travel time of a car moving at 50 m/s', 'convert 20 euros to dollars']);
  });
});
