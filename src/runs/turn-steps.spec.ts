import { TurnStepsRecorder } from './turn-steps';

const ev = (type: string, data: Record<string, unknown>, phaseIndex = 1) => ({ type, data: { phaseIndex, ...data } });

describe('TurnStepsRecorder', () => {
  it('a call id reused by a later model step is a second call, not an update of the first; each call knows where it sits in the text', () => {
    const steps = TurnStepsRecorder.fromStored([
      ev('chunk', { content: 'Let me look. ' }),
      ev('tool_calls', { calls: [{ id: 'call_0', name: 'list_files', arguments: '{"path":"a"}' }] }),
      ev('tool_progress', { callId: 'call_0', tool: 'list_files', action: 'calling', params: { path: 'a' } }),
      ev('tool_progress', { callId: 'call_0', tool: 'list_files', action: 'completed', outcome: 'success', durationMs: 3, isError: false }),
      ev('chunk', { content: 'Now the file.' }, 3),
      ev('tool_calls', { calls: [{ id: 'call_0', name: 'read_file', arguments: '{"path":"a/b"}' }] }, 3),
      ev('tool_progress', { callId: 'call_0', tool: 'read_file', action: 'calling', params: { path: 'a/b' } }, 3),
    ]);
    expect(steps).toEqual([
      { type: 'tool', callId: 'call_0', name: 'list_files', status: 'completed', isError: false, arguments: { path: 'a' }, outcome: 'success', durationMs: 3, phaseIndex: 1, textOffset: 'Let me look. '.length },
      // the turn ended while it ran: it stays `running`
      { type: 'tool', callId: 'call_0', name: 'read_file', status: 'running', isError: false, arguments: { path: 'a/b' }, phaseIndex: 3, textOffset: 'Let me look. Now the file.'.length },
    ]);
    // a leg that goes on after earlier text (a resume, a fork's prefix) counts from there
    expect(TurnStepsRecorder.fromStored([ev('tool_calls', { calls: [{ id: 'c', name: 'x', arguments: '{}' }] })], Infinity, 7)).toEqual([expect.objectContaining({ callId: 'c', textOffset: 7 })]);
  });

  it("a tool_phase error gives the call its reason; the call's final progress keeps it an error", () => {
    const r = new TurnStepsRecorder();
    r.apply('tool_progress', { callId: 'x', tool: 'fetch_page', action: 'calling', params: { url: 'http://h/' } });
    r.apply('tool_phase', { toolId: 'fetch_page', stage: 'searching', message: 'Fetching…', metadata: {} });
    r.apply('tool_phase', { toolId: 'fetch_page', stage: 'error', message: 'HTTP 404', metadata: { callId: 'x', outcome: 'exception' } });
    r.apply('tool_progress', { callId: 'x', tool: 'fetch_page', action: 'failed', outcome: 'exception', isError: true, durationMs: 12 });
    expect(r.steps()).toEqual([{ type: 'tool', callId: 'x', name: 'fetch_page', status: 'failed', isError: true, message: 'HTTP 404', arguments: { url: 'http://h/' }, outcome: 'exception', durationMs: 12, textOffset: 0 }]);
  });

  it('a resumed leg starts from the first leg’s steps up to its checkpoint, and steps() hands out copies', () => {
    const first = TurnStepsRecorder.fromStored([
      ev('phase', { status: 'start', phase: 'action_phase', cycleIndex: 0 }, 1),
      ev('notice', { code: 'duplicate_tool_call', message: 'Duplicate tool call detected' }, 1),
      ev('phase', { status: 'end', phase: 'action_phase', cycleIndex: 0, reason: 'tool_call' }, 1),
      ev('notice', { code: 'cycle_budget_reached', message: 'later' }, 4),
    ], 2);
    expect(first).toEqual([
      { type: 'phase', phase: 'action_phase', phaseIndex: 1, cycleIndex: 0, endReason: 'tool_call' },
      { type: 'notice', code: 'duplicate_tool_call', message: 'Duplicate tool call detected' },
    ]);
    const leg = new TurnStepsRecorder(first);
    leg.apply('sources', { data: [{ type: 'rag', title: 'a' }], sourceTypes: ['rag'], ragCount: 1, webCount: 0, confidence: 'high' });
    leg.apply('sources', { data: [{ type: 'rag', title: 'b' }], sourceTypes: ['rag'], ragCount: 1, webCount: 0, confidence: 'low' });
    const steps = leg.steps();
    // one sources step: the latest batch
    expect(steps.filter((s) => s.type === 'sources')).toEqual([{ type: 'sources', data: [{ type: 'rag', title: 'b' }], sourceTypes: ['rag'], ragCount: 1, webCount: 0, confidence: 'low' }]);
    (steps[1] as { message: string }).message = 'changed';
    expect(leg.steps()[1]).toMatchObject({ message: 'Duplicate tool call detected' });
    expect(first[1]).toMatchObject({ message: 'Duplicate tool call detected' });
  });

  it('keeps each approval with its decision (approved, denied with its reason, expired), and one left undecided as void', () => {
    const asked = (approvalId: string, callId: string) =>
      ev('approval_required', { approvalId, tool: 'write_file', callId, arguments: { path: callId }, reason: 'configured', expiresAt: '2026-11-27T14:00:00.000Z' }, 2);
    const steps = TurnStepsRecorder.fromStored([
      asked('a1', 'c1'),
      asked('a2', 'c2'),
      asked('a3', 'c3'),
      asked('a4', 'c4'),
      ev('approval_decided', { approvalId: 'a2', decision: 'deny', edited: false, by: 'key_1', reason: 'not that one' }, 2),
      ev('approval_decided', { approvalId: 'a1', decision: 'approve', edited: true, by: 'key_1' }, 2),
      ev('approval_decided', { approvalId: 'a3', decision: 'deny', edited: false, by: 'timeout', reason: 'timeout' }, 2),
    ]);
    const base = { type: 'approval', tool: 'write_file', reason: 'configured', expiresAt: '2026-11-27T14:00:00.000Z', phaseIndex: 2 };
    expect(steps).toEqual([
      { ...base, approvalId: 'a1', callId: 'c1', arguments: { path: 'c1' }, status: 'approved', decision: 'approve', edited: true, by: 'key_1', decisionReason: null },
      { ...base, approvalId: 'a2', callId: 'c2', arguments: { path: 'c2' }, status: 'denied', decision: 'deny', edited: false, by: 'key_1', decisionReason: 'not that one' },
      { ...base, approvalId: 'a3', callId: 'c3', arguments: { path: 'c3' }, status: 'expired', decision: 'deny', edited: false, by: 'timeout', decisionReason: 'timeout' },
      { ...base, approvalId: 'a4', callId: 'c4', arguments: { path: 'c4' }, status: 'void', decision: null, edited: false, by: null, decisionReason: null },
    ]);
    // asked again (a run taken over by another instance re-awaits the same id): it waits again, once
    const leg = new TurnStepsRecorder(steps);
    leg.apply('approval_required', { approvalId: 'a4', tool: 'write_file', callId: 'c4', arguments: { path: 'c4' }, reason: 'configured' });
    leg.apply('approval_decided', { approvalId: 'a4', decision: 'approve', edited: false, by: null });
    expect(leg.steps().filter((s) => s.type === 'approval').map((s) => s.type === 'approval' && [s.approvalId, s.status])).toEqual([
      ['a1', 'approved'], ['a2', 'denied'], ['a3', 'expired'], ['a4', 'approved'],
    ]);
  });
});
