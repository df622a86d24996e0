import { collectStream } from '../../../test/support/llm-stream-collector';
import type { LlmRequest, LlmToolSpec } from '../llm-adapter.port';
import { ReplayAdapter } from './replay.adapter';

const LIST_FILES: LlmToolSpec = { name: 'list_files', description: 'Lists files', parameters: { type: 'object' } };
const READ_FILE: LlmToolSpec = { name: 'read_file', description: 'Reads a file', parameters: { type: 'object' } };
const QUESTION = 'What is in the roadmap?';

describe('ReplayAdapter', () => {
  const replay = new ReplayAdapter({ contextWindow: 4096, delayMs: 0 });

  it('says it is a replay', async () => {
    await expect(replay.capabilities()).resolves.toEqual({ provider: 'replay', model: 'replay', toolCalling: true, replay: true, contextWindow: 4096 });
    const got = await collectStream(replay.stream({ messages: [{ role: 'user', content: QUESTION }] }));
    expect(got.text.startsWith('[replay] ')).toBe(true);
    expect(got.text).toContain(`"${QUESTION}"`);
    expect(got.finishes).toEqual([{ reason: 'stop', rawReason: 'stop', usage: expect.objectContaining({ promptTokens: Math.ceil(QUESTION.length / 4) }) }]);
  });

  it('streams word-sized deltas that add up to the text', async () => {
    const got = await collectStream(replay.stream({ messages: [{ role: 'user', content: QUESTION }] }));
    const deltas = got.events.filter((e) => e.type === 'text-delta');
    expect(deltas.length).toBeGreaterThan(10);
    for (const d of deltas) expect(d.text.trim()).not.toContain(' ');
  });

  it('calls list_files first, then answers with the tool output it received', async () => {
    const first: LlmRequest = { messages: [{ role: 'user', content: QUESTION }], tools: [LIST_FILES, READ_FILE] };
    const call = await collectStream(replay.stream(first));
    expect(call.text).toBe('');
    expect(call.toolCalls).toEqual([{ id: 'call_replay_1', name: 'list_files', args: { path: '.' } }]);
    expect(call.finishes[0].reason).toBe('tool_calls');

    const output = `docs/roadmap.md\nREADME.md\n${'x'.repeat(500)}`;
    const answer = await collectStream(
      replay.stream({
        ...first,
        messages: [
          ...first.messages,
          { role: 'assistant', content: null, toolCalls: [{ id: 'call_replay_1', name: 'list_files', arguments: '{"path":"."}' }] },
          { role: 'tool', content: output, toolCallId: 'call_replay_1', name: 'list_files' },
        ],
      }),
    );
    expect(answer.toolCalls).toEqual([]);
    expect(answer.text.startsWith('[replay] ')).toBe(true);
    expect(answer.text).toContain('tool output');
    expect(answer.text).toContain('docs/roadmap.md README.md');
    expect(answer.text).not.toContain('x'.repeat(250)); // only the first ~200 characters
  });

  it('recognises tool results injected as system messages (two-stage)', async () => {
    const got = await collectStream(
      replay.stream({
        messages: [
          { role: 'user', content: QUESTION },
          { role: 'system', content: '[Tool result: list_files] docs/' },
        ],
        tools: [LIST_FILES],
      }),
    );
    expect(got.toolCalls).toEqual([]);
    expect(got.text).toContain('docs/');
  });

  it("never calls a tool with toolChoice 'none', or when list_files is not offered", async () => {
    for (const request of [
      { messages: [{ role: 'user' as const, content: QUESTION }], tools: [LIST_FILES], toolChoice: 'none' as const },
      { messages: [{ role: 'user' as const, content: QUESTION }], tools: [READ_FILE] },
    ]) {
      const got = await collectStream(replay.stream(request));
      expect(got.toolCalls).toEqual([]);
      expect(got.text.startsWith('[replay] ')).toBe(true);
    }
  });

  it('complete() gives the same script at once', async () => {
    const result = await replay.complete({ messages: [{ role: 'user', content: QUESTION }], tools: [LIST_FILES] });
    expect(result).toMatchObject({ content: '', toolCalls: [{ id: 'call_replay_1', name: 'list_files', arguments: '{"path":"."}' }], finishReason: 'tool_calls' });
  });

  it('honours abort between words', async () => {
    const slow = new ReplayAdapter({ contextWindow: 4096, delayMs: 20 });
    const controller = new AbortController();
    const got = await collectStream(slow.stream({ messages: [{ role: 'user', content: QUESTION }] }, controller.signal), (e, i) => {
      if (i === 1) controller.abort();
    });
    expect(got.events.length).toBeLessThan(6);
    expect(got.errors.map((e) => e.code)).toEqual(['aborted']);
    expect(got.finishes).toEqual([]);
  });
});
