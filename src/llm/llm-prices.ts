import { readFileSync } from 'node:fs';
import type { LlmUsage } from './llm-adapter.port';

/** One model's prices per million tokens (docs/OPERATIONS.md, "Prices"). `cached`: cached prompt tokens; default `input`. */
export interface ModelPrice {
  input: number;
  output: number;
  cached?: number;
}

export type PriceTable = ReadonlyMap<string, ModelPrice>;

const isPrice = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v) && v >= 0;

/**
 * LLM_PRICES: inline JSON (starts with `{`) or the path of a JSON file, `{"model": {"input": 0.15,
 * "output": 0.6, "cached": 0.075}}`. Throws naming the model and field that is wrong, so a bad
 * table stops the boot instead of pricing turns at zero.
 */
export function parsePriceTable(value: string | undefined): PriceTable {
  if (!value?.trim()) return new Map();
  const text = value.trim().startsWith('{') ? value : readFileSync(value.trim(), 'utf8');
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    throw new Error('LLM_PRICES: not valid JSON');
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new Error('LLM_PRICES: must be a JSON object of models');
  const table = new Map<string, ModelPrice>();
  for (const [model, p] of Object.entries(raw as Record<string, unknown>)) {
    const o = (typeof p === 'object' && p !== null ? p : {}) as Record<string, unknown>;
    for (const f of ['input', 'output'] as const) if (!isPrice(o[f])) throw new Error(`LLM_PRICES: ${model}.${f} must be a number >= 0`);
    if (o.cached !== undefined && !isPrice(o.cached)) throw new Error(`LLM_PRICES: ${model}.cached must be a number >= 0`);
    table.set(model, { input: o.input as number, output: o.output as number, ...(o.cached !== undefined ? { cached: o.cached as number } : {}) });
  }
  return table;
}

/** The cost of some usage at a model's prices, rounded to a millionth (undefined: the model has no price). */
export function costOf(table: PriceTable, model: string, u: LlmUsage): number | undefined {
  const p = table.get(model);
  if (!p) return undefined;
  const cached = Math.min(u.cachedTokens ?? 0, u.promptTokens);
  const micro = (u.promptTokens - cached) * p.input + cached * (p.cached ?? p.input) + u.completionTokens * p.output;
  return Math.round(micro) / 1e6;
}
