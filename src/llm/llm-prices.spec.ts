import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { costOf, parsePriceTable } from './llm-prices';

describe('LLM_PRICES', () => {
  it('reads inline JSON and a file path alike; cached tokens cost `cached`, or `input` when unset', () => {
    const inline = parsePriceTable('{"m": {"input": 2.5, "output": 10, "cached": 1.25}, "n": {"input": 1, "output": 2}}');
    const dir = mkdtempSync(join(tmpdir(), 'orion-prices-'));
    writeFileSync(join(dir, 'prices.json'), '{"m": {"input": 2.5, "output": 10, "cached": 1.25}}');
    const fromFile = parsePriceTable(join(dir, 'prices.json'));
    const usage = { promptTokens: 1200, completionTokens: 300, totalTokens: 1500, cachedTokens: 400 };
    expect(costOf(inline, 'm', usage)).toBe(0.0055);
    expect(costOf(fromFile, 'm', usage)).toBe(0.0055);
    expect(costOf(inline, 'n', usage)).toBe(0.0018);
    expect(costOf(inline, 'unpriced', usage)).toBeUndefined();
    expect(parsePriceTable(undefined).size).toBe(0);
  });

  it.each([
    ['{"m": {"input": "2", "output": 1}}', 'LLM_PRICES: m.input must be a number >= 0'],
    ['{"m": {"input": 1}}', 'LLM_PRICES: m.output must be a number >= 0'],
    ['{"m": {"input": 1, "output": 1, "cached": -1}}', 'LLM_PRICES: m.cached must be a number >= 0'],
    ['{"m": ', 'LLM_PRICES: not valid JSON'],
    ['{"m": 1}', 'LLM_PRICES: m.input must be a number >= 0'],
  ])('refuses %s naming the field', (value, message) => {
    expect(() => parsePriceTable(value)).toThrow(message);
  });
});
