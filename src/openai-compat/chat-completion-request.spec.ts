import { readCompletionRequest, turnInput } from './chat-completion-request';
import { OpenAiError } from './openai-error';

const refusal = (fn: () => unknown): { status: number; param: string | null; code: string | null } => {
  try {
    fn();
  } catch (e) {
    if (e instanceof OpenAiError) return { status: e.status, param: e.param, code: e.code };
    throw e;
  }
  throw new Error('not refused');
};
const base = { model: 'orion-unified', messages: [{ role: 'user', content: 'Hi' }] };

describe('readCompletionRequest', () => {
  it('accepts what OpenAI clients send, sampling parameters included', () => {
    const dto = readCompletionRequest({ ...base, stream: true, stream_options: { include_usage: true }, temperature: 0.2, top_p: 1, max_tokens: 100, user: 'u', seed: 1, n: 1, logprobs: false, response_format: { type: 'text' } });
    expect(dto.stream).toBe(true);
    expect(dto.stream_options?.include_usage).toBe(true);
  });

  it.each([
    [{ tools: [{ type: 'function', function: { name: 'x' } }] }, 'tools', 'unsupported_parameter'],
    [{ tool_choice: 'auto' }, 'tool_choice', 'unsupported_parameter'],
    [{ functions: [] }, 'functions', 'unsupported_parameter'],
    [{ n: 2 }, 'n', 'unsupported_parameter'],
    [{ logprobs: true }, 'logprobs', 'unsupported_parameter'],
    [{ response_format: { type: 'json_object' } }, 'response_format', 'unsupported_value'],
    [{ frobnicate: 1 }, 'frobnicate', 'unknown_parameter'],
    [{ temperature: 'hot' }, 'temperature', 'invalid_value'],
    [{ stream_options: { include_usage: 'yes' } }, 'stream_options.include_usage', 'invalid_value'],
    [{ model: 42 }, 'model', 'invalid_value'],
    [{ tools: null }, 'tools', 'unsupported_parameter'],
    [{ messages: [] }, 'messages', 'invalid_value'],
  ])('refuses %j with 400 naming %s', (extra, param, code) => {
    expect(refusal(() => readCompletionRequest({ ...base, ...extra }))).toEqual({ status: 400, param, code });
  });
});

describe('readCompletionRequest messages', () => {
  it('a missing model or messages is "required", not a list of constraints', () => {
    const { model: _m, ...noModel } = base;
    expect(() => readCompletionRequest(noModel)).toThrow(expect.objectContaining({ message: 'model is required', param: 'model' }));
    expect(() => readCompletionRequest({ model: 'orion-unified' })).toThrow(expect.objectContaining({ message: 'messages is required', param: 'messages' }));
  });

  it('tools: null is refused as tools are, with the reason', () => {
    expect(() => readCompletionRequest({ ...base, tools: null })).toThrow(expect.objectContaining({ message: expect.stringContaining('a request may not declare tools') }));
  });
});

describe('turnInput', () => {
  it('takes the last user message as the new one, the messages before it as history, system text as instructions', () => {
    expect(
      turnInput([
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'What is in guides?' },
        { role: 'assistant', content: 'Two files.' },
        { role: 'developer', content: 'Answer in English.' },
        { role: 'user', content: [{ type: 'text', text: 'Which ' }, { type: 'text', text: 'ones?' }] },
      ]),
    ).toEqual({
      content: 'Which ones?',
      history: [
        { role: 'user', content: 'What is in guides?' },
        { role: 'assistant', content: 'Two files.' },
      ],
      instructions: 'Be brief.\n\nAnswer in English.',
    });
  });

  it.each([
    [[{ role: 'user', content: 'a' }, { role: 'tool', content: 'r', tool_call_id: 'x' }], 'messages[1].role'],
    [[{ role: 'assistant', content: null, tool_calls: [{ id: 'x' }] }, { role: 'user', content: 'a' }], 'messages[0].tool_calls'],
    [[{ role: 'user', content: 'a' }, { role: 'assistant', content: 'b' }], 'messages'],
    [[{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'x' } }] }], 'messages[0].content[0].type'],
    [[{ role: 'user', content: '   ' }], 'messages[0].content'],
    [[{ role: 'robot', content: 'a' }], 'messages[0].role'],
  ])('refuses %j naming %s', (messages, param) => {
    expect(refusal(() => turnInput(messages))).toMatchObject({ status: 400, param });
  });
});
