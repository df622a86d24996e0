import fc from 'fast-check';
import { untrustedBlock } from '../../common/util/untrusted-block';
import type { LlmMessage } from '../../llm/llm-adapter.port';
import { estimatePromptTokens } from '../../llm/usage-estimate';
import { emptyUsage, type TurnUsage } from '../protocol-event';
import { budgetFinalCall, budgetToolCall } from './budget-prompt';
import { FINAL_ANSWER_RESERVE, MIN_FINAL_TOKENS } from './token-budget';

const line = (i: number) => `Row ${i}: the ${i % 3 ? 'amber' : 'slate'} value is ${(i * 37) % 1009}.`;
const output = (lines: number) => Array.from({ length: lines }, (_, i) => line(i)).join('\n');
const used = (totalTokens: number): TurnUsage => ({ ...emptyUsage(), totalTokens, promptTokens: totalTokens, llmCalls: 1 });

function conversation(outputs: number[]): LlmMessage[] {
  return [
    { role: 'system', content: 'You answer from tool results.' },
    { role: 'user', content: 'Summarise the files.' },
    ...outputs.map((n, i): LlmMessage => ({ role: 'system', content: `[Tool result #${i + 1}]\n${untrustedBlock('read_file', output(n))}\n[End of tool result #${i + 1}]` })),
  ];
}

describe('the turn token budget applied to a request', () => {
  it('a final call whose tool outputs do not fit is cut to what the budget leaves, each block still closed and saying so', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 600 }), { minLength: 1, maxLength: 16 }), fc.integer({ min: 0, max: 6000 }), fc.integer({ min: 2000, max: 30_000 }), (outputs, spent, budget) => {
        const messages = conversation(outputs);
        const call = budgetFinalCall(budget, used(spent), undefined, messages, 8192);
        const sent = estimatePromptTokens(call.messages);
        expect(call.promptTokens).toBe(sent);
        // what can never be cut: the system prompt and the user's message, and a line per output left out
        const floor = estimatePromptTokens(conversation([])) + outputs.length * 40;
        if (floor < budget - spent - MIN_FINAL_TOKENS) expect(call.fits).toBe(true);
        if (call.fits) {
          expect(spent + sent).toBeLessThanOrEqual(budget - MIN_FINAL_TOKENS);
          expect(spent + sent + call.maxTokens).toBeLessThanOrEqual(budget);
        } else expect(spent + sent).toBeGreaterThan(budget - MIN_FINAL_TOKENS);
        expect(call.maxTokens).toBeGreaterThanOrEqual(MIN_FINAL_TOKENS);
        // every output is whole, cut with its block still closed, or left out whole; the user's message is never touched
        for (const m of call.messages.slice(2)) expect(m.content).toMatch(/<<<END_UNTRUSTED_TOOL_OUTPUT>>>\n\[End of tool result #\d+\]|was left out to fit the turn's token budget/);
        expect(call.messages[1]).toBe(messages[1]);
        if (call.cutChars > 0) expect(JSON.stringify(call.messages)).toMatch(/(cut|left out) to fit the turn's token budget/);
        else expect(call.messages).toBe(messages);
      }),
      { numRuns: 40 },
    );
  });

  it('a call with tools goes out only when its worst case and a final answer after it (that reads what it wrote) both fit', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 800 }), fc.integer({ min: 0, max: 20_000 }), fc.integer({ min: 1000, max: 40_000 }), (lines, spent, budget) => {
        const messages = conversation([lines]);
        const prompt = estimatePromptTokens(messages);
        const call = budgetToolCall(budget, used(spent), undefined, messages, undefined, 8192);
        // the call's own text counts twice: as its completion and again in the final call's prompt
        if (call) expect(spent + prompt + 2 * call.maxTokens + prompt + FINAL_ANSWER_RESERVE).toBeLessThanOrEqual(budget);
        else expect(spent + 2 * prompt + FINAL_ANSWER_RESERVE + 2 * 256).toBeGreaterThan(budget);
      }),
      { numRuns: 100 },
    );
  });

  it('after a call the provider counted, the next prompt is measured from the provider\'s figure', () => {
    const messages = conversation([200]);
    const estimate = estimatePromptTokens(messages);
    const call = budgetToolCall(100_000, used(5000), { estimated: estimate - 100, reported: 2 * (estimate - 100) }, messages, undefined, 8192);
    // twice the tokenizer's count, as the provider counted the last prompt
    expect(call?.promptTokens).toBe(2 * estimate);
  });

  it('a provider that counts twice the tokenizer: the output is cut to what fits, once, not left out', () => {
    for (const scale of [1, 2, 3.5]) {
      const messages = conversation([1500]);
      const whole = estimatePromptTokens(messages);
      const last = { estimated: 100, reported: Math.round(100 * scale) };
      // room for about half the output, as the provider counts it
      const budget = Math.round((whole * scale) / 2) + 64;
      const call = budgetFinalCall(budget, used(0), last, messages, 8192);
      expect({ scale, fits: call.fits }).toEqual({ scale, fits: true });
      const tool = call.messages[2].content ?? '';
      expect(tool.match(/were cut to fit/g)).toHaveLength(1);
      expect(tool).not.toContain('was left out');
      // most of what fits is kept: at least a third of the output
      expect(tool.length).toBeGreaterThan((messages[2].content ?? '').length / 3);
    }
  });
});
