import { DONE, finishReason, progressLine, toCompletion, toCompletionChunks, type CompletionFrame, type RunEventLike } from './openai-chunks.mapper';

const env = { requestId: 'r-1', projectId: 'default', conversationId: 'c-1' };
const ev = (type: string, data: Record<string, unknown> = {}): RunEventLike => ({ type, data: { ...env, ...data } });
const frame: CompletionFrame = { created: 1700000000, model: 'm-1', includeUsage: false, progress: false };
const usage = { promptTokens: 30, completionTokens: 7, totalTokens: 37, llmCalls: 2 };

/** A turn that called list_files, then answered. */
const turn: RunEventLike[] = [
  ev('start', { protocol: 'unified', model: 'm-1', userMessageId: 'u' }),
  ev('phase', { status: 'start' }),
  ev('tool_calls', { calls: [{ id: 'c1', name: 'list_files', arguments: '{"path":"."}' }] }),
  ev('tool_progress', { tool: 'list_files', callId: 'c1', action: 'calling', params: { path: '.' }, isError: false }),
  ev('tool_progress', { tool: 'list_files', callId: 'c1', action: 'completed', params: { path: '.' }, isError: false, outcome: 'success', durationMs: 3.4 }),
  ev('chunk', { content: 'Two ' }),
  ev('chunk', { content: 'files.' }),
  ev('done', { fullContent: 'Two files.', messageId: 'm', stopReason: 'final_answer', usage }),
];

describe('toCompletionChunks', () => {
  it('streams the role first, then content deltas, then one finish chunk and [DONE]; tool steps send nothing', () => {
    const out = turn.flatMap((e) => toCompletionChunks(e, frame));
    expect(out).toHaveLength(5);
    expect(out[0]).toEqual({ id: 'chatcmpl-r-1', object: 'chat.completion.chunk', created: 1700000000, model: 'm-1', choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null, logprobs: null }] });
    expect(out.slice(1, 3).map((c) => (c as { choices: Array<{ delta: unknown }> }).choices[0].delta)).toEqual([{ content: 'Two ' }, { content: 'files.' }]);
    expect(out[3]).toMatchObject({ choices: [{ delta: {}, finish_reason: 'stop' }], orion: { request_id: 'r-1', conversation_id: 'c-1', stop_reason: 'final_answer' } });
    expect(out[3]).not.toHaveProperty('usage');
    expect(out[4]).toBe(DONE);
    expect(JSON.stringify(out)).not.toContain('tool_calls');
  });

  it('puts usage on the final chunk when asked', () => {
    const [last] = toCompletionChunks(turn.at(-1)!, { ...frame, includeUsage: true });
    expect(last).toMatchObject({ usage: { prompt_tokens: 30, completion_tokens: 7, total_tokens: 37 }, choices: [{ finish_reason: 'stop' }] });
  });

  it('shows tool steps as readable progress only when opted in', () => {
    const on = turn.flatMap((e) => toCompletionChunks(e, { ...frame, progress: true }));
    const lines = on.flatMap((c) => (typeof c === 'object' && 'choices' in c && c.choices[0].delta.orion_progress ? [c.choices[0].delta.orion_progress] : []));
    expect(lines).toEqual(['Running list_files {"path":"."}', 'list_files completed in 3 ms']);
  });

  it('maps a cut-off answer to length and a failed turn to an error object followed by [DONE] alone', () => {
    expect(finishReason('max_tokens')).toBe('length');
    expect(finishReason('max_iterations')).toBe('stop');
    expect(finishReason('cancelled')).toBe('stop');
    const error = toCompletionChunks(ev('error', { code: 'llm_timeout', message: 'The model did not answer in time', retryable: true }), frame);
    expect(error).toEqual([{ error: { message: 'The model did not answer in time', type: 'server_error', param: null, code: 'llm_timeout' } }]);
    expect(toCompletionChunks(ev('done', { stopReason: 'error', fullContent: '', usage }), frame)).toEqual([DONE]);
  });

  it('ends a paused run with a finish chunk whose stop reason says paused', () => {
    expect(toCompletionChunks(ev('paused', { resumeFromPhaseIndex: 2 }), frame)[0]).toMatchObject({ choices: [{ finish_reason: 'stop' }], orion: { stop_reason: 'paused' } });
  });
});

describe('toCompletion', () => {
  it('is the whole turn as one chat.completion with usage', () => {
    const out = toCompletion(turn, frame);
    expect(out).toEqual({
      completion: {
        id: 'chatcmpl-r-1',
        object: 'chat.completion',
        created: 1700000000,
        model: 'm-1',
        choices: [{ index: 0, message: { role: 'assistant', content: 'Two files.', refusal: null }, finish_reason: 'stop', logprobs: null }],
        usage: { prompt_tokens: 30, completion_tokens: 7, total_tokens: 37 },
        orion: { request_id: 'r-1', conversation_id: 'c-1', stop_reason: 'final_answer' },
      },
    });
    expect(toCompletion(turn, { ...frame, progress: true })).toMatchObject({ completion: { choices: [{ message: { orion_progress: ['Running list_files {"path":"."}', 'list_files completed in 3 ms'] } }] } });
  });

  it('is a 502 for a model failure and a 500 for any other', () => {
    const failed = (code: string) => [turn[0], ev('error', { code, message: 'x' }), ev('done', { stopReason: 'error', fullContent: '', usage })];
    expect(toCompletion(failed('llm_server_error'), frame)).toMatchObject({ status: 502, error: { error: { code: 'llm_server_error', type: 'server_error' } } });
    expect(toCompletion(failed('storage_error'), frame)).toMatchObject({ status: 500 });
  });
});

describe('progressLine', () => {
  it('reads failures, refusals, tool stages and notices; nothing else', () => {
    expect(progressLine(ev('tool_progress', { tool: 'fetch_page', action: 'failed', outcome: 'timeout' }))).toBe('fetch_page failed (timeout)');
    expect(progressLine(ev('tool_progress', { tool: 'list_files', action: 'refused', outcome: 'duplicate' }))).toBe('list_files refused (duplicate)');
    expect(progressLine(ev('tool_phase', { toolId: 'rag_query', stage: 'searching', message: 'Searching the knowledge base…' }))).toBe('rag_query: Searching the knowledge base…');
    expect(progressLine(ev('tool_phase', { toolId: 'rag_query', stage: 'error', message: 'boom' }))).toBeNull();
    expect(progressLine(ev('notice', { code: 'duplicate_tool_call', message: 'Duplicate tool call detected' }))).toBe('Duplicate tool call detected');
    expect(progressLine(ev('sources', { data: [] }))).toBeNull();
  });

  it('reads a call waiting for approval (naming the route that decides it) and the decision', () => {
    expect(progressLine(ev('approval_required', { requestId: 'r1', approvalId: 'a1', tool: 'delete_file', callId: 'c1', arguments: {}, reason: 'configured' }))).toBe(
      'delete_file waits for approval (approvalId a1): POST /api/chat/runs/r1/approvals/a1 {"decision":"approve"} or {"decision":"deny"}',
    );
    expect(progressLine(ev('approval_decided', { requestId: 'r1', approvalId: 'a1', decision: 'approve', edited: false, by: null }))).toBe('Approval a1 approved');
    expect(progressLine(ev('approval_decided', { requestId: 'r1', approvalId: 'a1', decision: 'deny', edited: false, by: 'timeout' }))).toBe('Approval a1 denied (timeout)');
  });
});
