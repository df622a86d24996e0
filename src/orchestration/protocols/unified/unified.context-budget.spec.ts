import type { LlmMessage } from '../../../llm/llm-adapter.port';
import { assembleMessages, DEFAULT_CONTEXT_WINDOW, MIN_TOOL_OUTPUT_HEAD_CHARS, shortenOldestFirst, splitConversation, unifiedBudget } from './unified.context-budget';

const tool = (id: string, chars: number, fill = 'x'): LlmMessage => ({ role: 'tool', toolCallId: id, name: 't', content: fill.repeat(chars) });

describe('unified context budget', () => {
  it('splits the window 12/18/18/50 and caps the response at MAX_RESPONSE_TOKENS', () => {
    expect(unifiedBudget(10_000)).toEqual({ window: 10_000, systemTokens: 1200, historyTokens: 1800, promptTokens: 1800, responseTokens: 5000, maxResponseTokens: 5000 });
    expect(unifiedBudget(128_000).maxResponseTokens).toBe(8192);
    expect(unifiedBudget(undefined).window).toBe(DEFAULT_CONTEXT_WINDOW);
    expect(unifiedBudget(0).window).toBe(DEFAULT_CONTEXT_WINDOW);
  });

  it('keeps the new user message whole and trims the history before it', () => {
    const budget = unifiedBudget(1000); // history: 180 tokens
    const old: LlmMessage[] = [
      { role: 'user', content: 'u1'.repeat(200) },
      { role: 'assistant', content: 'a1'.repeat(200) },
      { role: 'user', content: 'u2' },
      { role: 'assistant', content: 'a2' },
    ];
    const user: LlmMessage = { role: 'user', content: 'p'.repeat(10_000) };
    const { history, user: kept } = splitConversation([...old, user], budget);
    expect(kept).toBe(user);
    expect(history.map((m) => m.content)).toEqual(['u2', 'a2']);
  });

  it('leaves tool outputs alone while they fit', () => {
    const msgs = [tool('a', 100), tool('b', 100)];
    expect(shortenOldestFirst(msgs, 1000)).toEqual({ messages: msgs, shortened: 0, removedChars: 0 });
  });

  it('cuts the oldest output first, keeps its head, says so, and never mutates its input', () => {
    const msgs = [tool('a', 4000, 'A'), tool('b', 4000, 'B')];
    const out = shortenOldestFirst(msgs, 1500); // 2000+8 tokens of output, 1500 of room
    expect(out.shortened).toBe(1);
    expect(out.messages[1]).toBe(msgs[1]);
    const cut = out.messages[0].content!;
    expect(cut.startsWith('A'.repeat(1000))).toBe(true);
    expect(cut).toMatch(/\[… \d+ of 4000 characters of this tool output were cut to fit the context window/);
    expect(msgs[0].content).toHaveLength(4000);
    const tokens = out.messages.reduce((n, m) => n + Math.ceil(m.content!.length / 4) + 4, 0);
    expect(tokens).toBeLessThanOrEqual(1500);
  });

  it('moves on to newer outputs when the oldest are down to their head', () => {
    const out = shortenOldestFirst([tool('a', 2000), tool('b', 2000), tool('c', 2000)], 300);
    expect(out.shortened).toBe(3);
    for (const m of out.messages) expect(m.content!.length).toBeLessThan(MIN_TOOL_OUTPUT_HEAD_CHARS + 200);
  });

  it('assembles system, history, user, then each step in order', () => {
    const { messages, report } = assembleMessages({
      system: 'sys',
      history: [{ role: 'user', content: 'old' }, { role: 'assistant', content: 'ans' }],
      user: { role: 'user', content: 'new' },
      steps: [{ assistant: { role: 'assistant', content: null, toolCalls: [{ id: 'c1', name: 't', arguments: '{}' }] }, tools: [tool('c1', 10)] }],
      specs: [],
      budget: unifiedBudget(10_000),
    });
    expect(messages.map((m) => `${m.role}:${m.content ?? ''}`.slice(0, 15))).toEqual(['system:sys', 'user:old', 'assistant:ans', 'user:new', 'assistant:', 'tool:<<<UNTRUST']);
    expect(report).toMatchObject({ shortenedToolOutputs: 0, removedToolChars: 0 });
  });
});
