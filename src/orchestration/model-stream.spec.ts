import { callTool, finish, say, ScriptedLlm } from '../../test/support/scripted-llm';
import { modelStep } from '../../test/support/model-step';
import type { LlmStreamEvent } from '../llm/llm-adapter.port';
import { ModelStream, type ModelStreamOptions, type ModelStreamResult } from './model-stream';

const ASK = { messages: [{ role: 'user' as const, content: 'go' }] };

const step = modelStep;

const TWO_STAGE: ModelStreamOptions = { stopAtFirstCompleteCall: true };
const UNIFIED: ModelStreamOptions = { stopAtFirstCompleteCall: false };

describe('ModelStream', () => {
  describe('two-stage: the first complete call ends the response', () => {
    it('streams and keeps no text that comes after the deciding call, up to the finish', async () => {
      const { chunks, res } = await step([...say('Let me read it. '), ...callTool(0, 'read_file', '{"path":"a.md"}', 4), ...say('I will now also ', 'tell you a secret.'), finish('tool_calls')], TWO_STAGE);
      expect(chunks).toEqual(['Let me read it. ']);
      expect(res.text).toBe('Let me read it. ');
      expect(res.calls.map((c) => [c.name, c.args])).toEqual([['read_file', { path: 'a.md' }]]);
      expect(res.finishReason).toBe('tool_calls');
    });

    it('drops the text after the call and stops reading when the next call starts (upstream aborted)', async () => {
      const events = [...callTool(0, 'list_files', '{}'), ...say('trailing '), ...callTool(1, 'read_file', '{"path":"b"}'), ...say('never read'), finish('tool_calls')];
      const { chunks, res, llm } = await step(events, TWO_STAGE);
      expect(chunks).toEqual([]);
      expect(res.text).toBe('');
      expect(res.stoppedEarly).toBe(true);
      expect(res.calls.map((c) => c.name)).toEqual(['list_files']);
      // nothing after the first fragment of the second call was read
      expect(llm.consumed[0]).toBe(4);
    });

    it('does not count reasoning that came after the deciding call', async () => {
      const { res } = await step([{ type: 'reasoning-delta', text: 'abc' }, ...callTool(0, 'list_files', '{}'), { type: 'reasoning-delta', text: 'later' }, finish('tool_calls')], TWO_STAGE);
      expect(res.reasoningChars).toBe(3);
    });

    it('ignores events handed to it after it stopped (chunks already decoded behind the call)', async () => {
      const stream = new ModelStream(new ScriptedLlm([[]]), ASK, new AbortController().signal, TWO_STAGE);
      for (const e of [...callTool(0, 'list_files', '{}'), ...callTool(1, 'read_file', '{"path":"b"}')]) stream.accept(e);
      expect(stream.stopped).toBe(true);
      const queued: LlmStreamEvent[] = [...say('queued text'), { type: 'reasoning-delta', text: 'r' }, ...callTool(2, 'web_search', '{}'), finish('stop'), { type: 'error', error: { code: 'aborted', message: 'aborted', retryable: false } }];
      expect(queued.map((e) => stream.accept(e))).toEqual(queued.map(() => undefined));
      const res = stream.close();
      expect([res.text, res.reasoningChars, res.finishReason, res.error]).toEqual(['', 0, undefined, undefined]);
      expect(res.calls.map((c) => c.name)).toEqual(['list_files']);
    });

    it('releases the text held behind a call that turned out unusable, in order, before the next call', async () => {
      const events = [...say('A '), ...callTool(0, 'read_file', '{"path":'), ...say('B '), ...callTool(1, 'list_files', '{}'), ...say('C'), finish('tool_calls')];
      const { chunks, res } = await step(events, TWO_STAGE);
      expect(chunks).toEqual(['A ', 'B ']);
      expect(res.text).toBe('A B ');
      expect(res.calls.map((c) => c.name)).toEqual(['list_files']);
      expect(res.invalid.map((c) => c.name)).toEqual(['read_file']);
    });

    it('releases held text at the finish when no call completed', async () => {
      const { chunks, res } = await step([...callTool(0, 'read_file', '{"path":'), ...say('Sorry, ', 'no.'), finish('stop')], TWO_STAGE);
      expect(chunks.join('')).toBe('Sorry, no.');
      expect(res.calls).toEqual([]);
      expect(res.invalid).toHaveLength(1);
    });

    it('releases held text when the stream fails before the call completed, drops it when cancelled', async () => {
      const failing = [...callTool(0, 'list_files', '{}'), ...say('partial'), { type: 'error' as const, error: { code: 'network' as const, message: 'reset', retryable: true } }];
      const failed = await step(failing, TWO_STAGE);
      expect(failed.chunks).toEqual(['partial']);
      expect(failed.res.calls).toEqual([]);
      expect(failed.res.error?.code).toBe('network');

      const abort = new AbortController();
      const stream = new ModelStream(new ScriptedLlm([[]]), ASK, abort.signal, TWO_STAGE);
      for (const e of [...callTool(0, 'list_files', '{}'), ...say('partial')]) expect(stream.accept(e)).toBeUndefined();
      abort.abort();
      expect(stream.accept({ type: 'error', error: { code: 'aborted', message: 'aborted', retryable: false } })).toBeUndefined();
      expect(stream.close().text).toBe('');
    });

    it('treats the end of a stream without finish as the boundary: held text follows an incomplete call', async () => {
      const { chunks, res } = await step([...callTool(0, 'read_file', '{"path":'), ...say('tail')], TWO_STAGE);
      expect(chunks).toEqual(['tail']);
      expect(res.text).toBe('tail');
      const complete = await step([...callTool(0, 'list_files', '{}'), ...say('tail')], TWO_STAGE);
      expect(complete.chunks).toEqual([]);
      expect(complete.res.calls.map((c) => c.name)).toEqual(['list_files']);
    });

    it('puts the lead before released text like any first text', async () => {
      const { chunks } = await step([...callTool(0, 'read_file', '{"path":'), ...say('held'), finish('stop')], { ...TWO_STAGE, lead: '\n\n' });
      expect(chunks).toEqual(['\n\nheld']);
    });
  });

  describe('usage of a cut call (issue 46: a budget is not dodged by cancelling)', () => {
    it('a cancelled call without reported usage is estimated with the tokenizer and marked estimated; a provider error is not', async () => {
      const abort = new AbortController();
      const stream = new ModelStream(new ScriptedLlm([[]]), ASK, abort.signal, UNIFIED);
      for (const e of say('The answer so far, about ', 'twelve words long before the cancel.')) stream.accept(e);
      abort.abort();
      stream.accept({ type: 'error', error: { code: 'aborted', message: 'aborted', retryable: false } });
      const usage = stream.close().usage!;
      expect(usage.estimated).toBe(true);
      // the prompt ("go" and its message overhead) and the streamed text both count
      expect(usage.promptTokens).toBeGreaterThan(0);
      expect(usage.completionTokens).toBeGreaterThanOrEqual(10);
      expect(usage.totalTokens).toBe(usage.promptTokens + usage.completionTokens);

      const failed = await step([...say('partial'), { type: 'error' as const, error: { code: 'network' as const, message: 'reset', retryable: true } }], UNIFIED);
      expect(failed.res.usage).toBeUndefined();
    });

    it('a cancelled call that reported its usage keeps it', () => {
      const abort = new AbortController();
      const stream = new ModelStream(new ScriptedLlm([[]]), ASK, abort.signal, UNIFIED);
      stream.accept({ type: 'finish', reason: 'stop', usage: { promptTokens: 7, completionTokens: 3, totalTokens: 10 } });
      abort.abort();
      expect(stream.close().usage).toEqual({ promptTokens: 7, completionTokens: 3, totalTokens: 10 });
    });
  });

  describe('every route: nothing after the finish', () => {
    it.each([
      ['two-stage', TWO_STAGE],
      ['unified', UNIFIED],
    ])('%s: a tool call and text after finish stop are not run, streamed or kept, and are counted', async (_name, opts) => {
      const events = [...say('Done.'), finish('stop'), ...say(' late'), ...callTool(0, 'list_files', '{}'), { type: 'reasoning-delta' as const, text: 'x' }, finish('tool_calls')];
      const { chunks, res } = await step(events, opts);
      expect(chunks).toEqual(['Done.']);
      expect(res.text).toBe('Done.');
      expect(res.calls).toEqual([]);
      expect(res.invalid).toEqual([]);
      expect(res.finishReason).toBe('stop');
      expect(res.ignoredAfterFinish).toEqual({ text: 1, reasoning: 1, toolCalls: 2 });
    });

    it("adds what the adapter dropped after the provider's finish_reason", async () => {
      const { res } = await step([...say('ok'), { type: 'finish', reason: 'stop', ignoredAfterFinish: { text: 0, reasoning: 0, toolCalls: 3 } }, ...say('late')], UNIFIED);
      expect(res.ignoredAfterFinish).toEqual({ text: 1, reasoning: 0, toolCalls: 3 });
    });

    it('reports nothing for a well-formed response', async () => {
      const { res } = await step([...say('ok'), ...callTool(0, 'list_files', '{}'), finish('tool_calls')], UNIFIED);
      expect(res.ignoredAfterFinish).toBeUndefined();
      expect(res.calls.map((c) => c.name)).toEqual(['list_files']);
    });

    it('unified keeps text after a call: every call of its response runs, nothing is held', async () => {
      const { chunks, res } = await step([...callTool(0, 'list_files', '{}'), ...say('and text'), finish('tool_calls')], UNIFIED);
      expect(chunks).toEqual(['and text']);
      expect(res.calls).toHaveLength(1);
    });
  });
});
