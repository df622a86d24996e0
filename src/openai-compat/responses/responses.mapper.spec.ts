import { type ResponseEvent, ResponseProjection, requestIdOf, responseId } from './responses.mapper';

const RUN = '0f8fad5b-d9cb-469f-a165-70867728950e';
const env = { requestId: RUN, conversationId: '1b4e28ba-2fa1-11d2-883f-0016d3cca427' };
const frame = { requestId: RUN, createdAt: 1767225600, model: 'model-a', instructions: null, metadata: {}, previousResponseId: null, background: false };
const run = (events: Array<{ type: string; data: Record<string, unknown> }>) => {
  const p = new ResponseProjection(frame);
  const out: ResponseEvent[] = events.flatMap((e) => p.push({ type: e.type, data: { ...env, ...e.data } }));
  return { out, snapshot: p.snapshot() as { status: string; output: Array<Record<string, unknown>>; error: unknown; incomplete_details: unknown } };
};
const start = { type: 'start', data: { model: 'model-a' } };
const done = (data: Record<string, unknown>) => ({ type: 'done', data: { usage: { promptTokens: 3, completionTokens: 2, totalTokens: 5 }, ...data } });

describe('ResponseProjection', () => {
  it('numbers events from 0 without gaps and ids the response by its run; usage with its cached and reasoning tokens', () => {
    const { out, snapshot } = run([start, { type: 'chunk', data: { content: 'Hi' } }, done({ stopReason: 'final_answer', fullContent: 'Hi', usage: { promptTokens: 9, completionTokens: 4, totalTokens: 13, cachedTokens: 6, reasoningTokens: 1 } })]);
    expect((snapshot as unknown as { usage: unknown }).usage).toEqual({ input_tokens: 9, output_tokens: 4, total_tokens: 13, input_tokens_details: { cached_tokens: 6 }, output_tokens_details: { reasoning_tokens: 1 } });
    // the turn's cost and the estimate mark, as /v1/chat/completions carries them
    const priced = run([start, done({ stopReason: 'final_answer', fullContent: '', usage: { promptTokens: 9, completionTokens: 4, totalTokens: 13, cost: 0.000123, estimated: true } })]).snapshot;
    expect((priced as unknown as { usage: unknown }).usage).toMatchObject({ input_tokens: 9, orion_cost: 0.000123, orion_estimated: true });
    expect(out.map((e) => e.sequence_number)).toEqual(out.map((_, i) => i));
    expect(requestIdOf(responseId(RUN))).toBe(RUN);
    expect(requestIdOf('resp_not-a-run')).toBeNull();
  });

  it('a failed tool is an mcp_call that failed with its outcome; raw output only when the event carries it', () => {
    const { out, snapshot } = run([
      start,
      { type: 'tool_progress', data: { tool: 'read_file', callId: 'c1', action: 'calling', params: { path: 'a' } } },
      { type: 'tool_progress', data: { tool: 'read_file', callId: 'c1', action: 'failed', params: { path: 'a' }, outcome: 'not_found' } },
      { type: 'tool_progress', data: { tool: 'list_files', callId: 'c2', action: 'completed', params: {}, output: { files: ['x'] } } },
      done({ stopReason: 'final_answer', fullContent: '' }),
    ]);
    expect(out.map((e) => e.type)).toContain('response.mcp_call.failed');
    expect(snapshot.output).toEqual([
      expect.objectContaining({ type: 'mcp_call', name: 'read_file', status: 'failed', error: 'not_found', output: null }),
      expect.objectContaining({ type: 'mcp_call', name: 'list_files', status: 'completed', output: JSON.stringify({ files: ['x'] }) }),
    ]);
  });

  it('ends failed with the error, incomplete at the token limit or a pause, cancelled on a cancel', () => {
    const failed = run([start, { type: 'error', data: { code: 'llm_unavailable', message: 'down' } }, done({ stopReason: 'error' })]);
    expect([failed.out.at(-1)?.type, failed.snapshot.status, failed.snapshot.error]).toEqual(['response.failed', 'failed', { code: 'llm_unavailable', message: 'down' }]);
    const cut = run([start, { type: 'chunk', data: { content: 'Half' } }, done({ stopReason: 'max_tokens', fullContent: 'Half' })]);
    expect([cut.out.at(-1)?.type, cut.snapshot.status, cut.snapshot.incomplete_details]).toEqual(['response.incomplete', 'incomplete', { reason: 'max_output_tokens' }]);
    expect(cut.snapshot.output[0]).toMatchObject({ type: 'message', status: 'incomplete' });
    const paused = run([start, { type: 'paused', data: {} }]);
    expect([paused.snapshot.status, paused.snapshot.incomplete_details]).toEqual(['incomplete', { reason: 'paused' }]);
    const cancelled = run([start, done({ stopReason: 'cancelled', fullContent: '' })]);
    expect([cancelled.out.at(-1)?.type, cancelled.snapshot.status]).toEqual(['response.incomplete', 'cancelled']);
  });

  it('sends the rest of the stored answer the stream held back as one more delta, so the text is the stored answer', () => {
    const { out, snapshot } = run([start, { type: 'chunk', data: { content: 'The answer ' } }, done({ stopReason: 'final_answer', fullContent: 'The answer is whole.' })]);
    const deltas = out.flatMap((e) => (e.type === 'response.output_text.delta' ? [e.delta] : []));
    expect(deltas).toEqual(['The answer ', 'is whole.']);
    expect(snapshot.output[0]).toMatchObject({ type: 'message', status: 'completed', content: [{ type: 'output_text', text: 'The answer is whole.' }] });
  });

  it('a resumed leg adds no second response.created', () => {
    const { out } = run([start, { type: 'paused', data: {} }, { type: 'start', data: { resumed: true } }, { type: 'chunk', data: { content: 'Go on' } }, done({ stopReason: 'final_answer', fullContent: 'Go on' })]);
    expect(out.filter((e) => e.type === 'response.created')).toHaveLength(1);
  });
});
