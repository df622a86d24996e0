import { progressLine, turnOutcome } from './turn-outcome';

const env = { requestId: 'r1', conversationId: 'c1' };

describe('turnOutcome', () => {
  it('folds a turn into its answer, sources, tool steps and stop reason; the stored answer wins over the chunks', () => {
    const o = turnOutcome([
      { type: 'start', data: { ...env } },
      { type: 'tool_progress', data: { ...env, tool: 'rag_query', action: 'calling', params: {} } },
      { type: 'tool_progress', data: { ...env, tool: 'rag_query', action: 'completed', outcome: 'success', durationMs: 3 } },
      { type: 'sources', data: { ...env, data: [{ type: 'rag', title: 'Install', path: 'guides/install.md', score: 0.9 }] } },
      { type: 'chunk', data: { ...env, content: 'Run npm' } },
      { type: 'done', data: { ...env, fullContent: 'Run npm install.', stopReason: 'final_answer' } },
    ]);
    expect(o).toEqual({
      requestId: 'r1',
      conversationId: 'c1',
      answer: 'Run npm install.',
      stopReason: 'final_answer',
      sources: [{ type: 'rag', title: 'Install', path: 'guides/install.md' }],
      tools: [{ name: 'rag_query', status: 'completed', outcome: 'success' }],
    });
  });

  it('leaves out what a takeover superseded: the continued answer and its tools count once', () => {
    const o = turnOutcome([
      { seq: 1, type: 'start', data: { ...env } },
      { seq: 2, type: 'tool_progress', data: { ...env, tool: 'list_files', action: 'completed', outcome: 'success' } },
      { seq: 3, type: 'chunk', data: { ...env, content: 'The fi' } },
      { seq: 4, type: 'start', data: { ...env, takeover: true, supersedesFromSeq: 3 } },
      { seq: 5, type: 'chunk', data: { ...env, content: 'The files are a and b.' } },
    ] as Array<{ seq: number; type: string; data: Record<string, unknown> }>);
    expect(o.answer).toBe('The files are a and b.');
    expect(o.tools).toEqual([{ name: 'list_files', status: 'completed', outcome: 'success' }]);
  });

  it('an approval asked for and not yet decided is awaited; once decided it is not', () => {
    const asked = { type: 'approval_required', data: { ...env, approvalId: 'a1', tool: 'read_file', arguments: { path: 'x' } } };
    expect(turnOutcome([asked]).awaiting).toEqual({ approvalId: 'a1', tool: 'read_file', arguments: { path: 'x' } });
    expect(turnOutcome([asked, { type: 'approval_decided', data: { ...env, approvalId: 'a1', decision: 'approve' } }]).awaiting).toBeUndefined();
  });

  it('progress lines: tool steps, tool phases and approvals; nothing for answer text', () => {
    expect(progressLine({ type: 'tool_progress', data: { tool: 'list_files', action: 'calling', params: { path: '.' } } })).toBe('Running list_files {"path":"."}');
    expect(progressLine({ type: 'tool_progress', data: { tool: 'list_files', action: 'failed', outcome: 'timeout', durationMs: 9 } })).toBe('list_files failed in 9 ms (timeout)');
    expect(progressLine({ type: 'tool_phase', data: { message: 'Searching the knowledge base…' } })).toBe('Searching the knowledge base…');
    expect(progressLine({ type: 'approval_required', data: { ...env, approvalId: 'a1', tool: 'read_file' } })).toMatch(/^Waiting for approval of read_file .*POST \/api\/chat\/runs\/r1\/approvals\/a1/);
    expect(progressLine({ type: 'chunk', data: { content: 'x' } })).toBeNull();
  });
});
