/** The chat page's approval cards as state (public/assets/approval-state.js, turn-state.js) and the debug panel's waiting calls. */
type State = Record<string, any>;
const turn = require('./public/assets/turn-state.js') as {
  createTurnState: (init?: Partial<State>) => State;
  applyEvent: (s: State, type: string, data: Record<string, unknown>) => boolean;
  stateFromStored: (m: Record<string, unknown>) => State;
  isErrorStep: (t: State) => boolean;
  outcomeLabel: (outcome: string | undefined) => string;
};
const approvals = require('./public/assets/approval-state.js') as {
  pendingApprovals: (s: State) => State[];
  approvalFromRow: (s: State, row: Record<string, unknown>) => void;
  approvalSending: (s: State, id: string) => void;
  approvalRefused: (s: State, id: string, message: string) => void;
  canDecide: (a: State) => boolean;
  parseEditedArguments: (text: string) => { ok: true; value: Record<string, unknown> } | { ok: false; error: string };
  decisionBody: (decision: 'approve' | 'deny', extra?: { reason?: string; arguments?: Record<string, unknown> }) => Record<string, unknown>;
  decisionText: (a: State) => string;
  approvalTitle: (a: State) => string;
  prettyArguments: (args: unknown) => string;
};
const toolOnly = require('./public/assets/tool-only-approvals.js') as {
  waitingCalls: (result: unknown) => Array<{ index: number; tool: string; arguments: Record<string, unknown>; reason: string | null }>;
  withApprovedCalls: (body: Record<string, unknown>, approved: Array<{ tool: string; arguments: Record<string, unknown> }>) => Record<string, unknown>;
};
const { createTurnState, applyEvent, stateFromStored, isErrorStep, outcomeLabel } = turn;
const { pendingApprovals, approvalFromRow, approvalSending, approvalRefused, canDecide, parseEditedArguments, decisionBody, decisionText, approvalTitle, prettyArguments } = approvals;

const env = (seq: number) => ({ requestId: 'r1', projectId: 'default', conversationId: 'c1', seq, phase: 'tool_phase', phaseIndex: 2, cycleIndex: 1 });
const required = (seq: number, approvalId: string, extra: Record<string, unknown> = {}) => ({
  ...env(seq),
  approvalId,
  tool: 'write_file',
  callId: `call_${approvalId}`,
  arguments: { path: 'notes.md', content: 'hello', token: '[REDACTED]' },
  reason: 'configured',
  expiresAt: '2026-11-27T14:00:00.000Z',
  ...extra,
});

describe('approval cards: state', () => {
  it('draws a card from approval_required, and approval_decided says the decision and who made it', () => {
    const s = createTurnState();
    applyEvent(s, 'approval_required', required(1, 'a1'));
    expect(s.approvals).toEqual([
      {
        approvalId: 'a1', tool: 'write_file', callId: 'call_a1', arguments: { path: 'notes.md', content: 'hello', token: '[REDACTED]' }, reason: 'configured',
        expiresAt: '2026-11-27T14:00:00.000Z', status: 'pending', edited: false, by: null, decisionReason: null, sending: false, error: null,
      },
    ]);
    expect(pendingApprovals(s)).toHaveLength(1);
    expect(s.status).toBe('streaming');
    expect(canDecide(s.approvals[0])).toBe(true);

    applyEvent(s, 'approval_decided', { ...env(2), approvalId: 'a1', decision: 'approve', edited: true, by: 'key-7' });
    expect(s.approvals[0]).toMatchObject({ status: 'approved', edited: true, by: 'key-7' });
    expect(canDecide(s.approvals[0])).toBe(false);
    expect(decisionText(s.approvals[0])).toBe('Approved by key-7 with edited arguments');
  });

  it('heads a card "Approval needed:" only while it waits; decided, it says how', () => {
    expect(['pending', 'approved', 'denied', 'expired', 'void'].map((status) => approvalTitle({ status }))).toEqual([
      'Approval needed: ', 'Approved: ', 'Denied: ', 'Expired, denied: ', 'No longer waiting: ',
    ]);
  });

  it('keeps a waiting call as one tool step: waiting, then run once approved', () => {
    const s = createTurnState();
    applyEvent(s, 'tool_progress', { ...env(1), tool: 'write_file', callId: 'call_a1', action: 'calling', isError: false });
    applyEvent(s, 'tool_progress', { ...env(2), tool: 'write_file', callId: 'call_a1', action: 'failed', isError: true, outcome: 'approval_required' });
    applyEvent(s, 'approval_required', required(3, 'a1'));
    expect(s.tools).toHaveLength(1);
    expect(isErrorStep(s.tools[0])).toBe(false);
    applyEvent(s, 'approval_decided', { ...env(4), approvalId: 'a1', decision: 'approve', edited: false, by: 'k' });
    applyEvent(s, 'tool_progress', { ...env(5), tool: 'write_file', callId: 'call_a1', action: 'calling', isError: false });
    applyEvent(s, 'tool_progress', { ...env(6), tool: 'write_file', callId: 'call_a1', action: 'completed', isError: false, outcome: 'success' });
    expect(s.tools).toEqual([expect.objectContaining({ callId: 'call_a1', status: 'completed', isError: false, outcome: 'success' })]);
  });

  it('tells a denial with its reason from an expiry (by timeout), and names no one without keys', () => {
    const s = createTurnState();
    applyEvent(s, 'approval_required', required(1, 'a1'));
    applyEvent(s, 'approval_required', required(2, 'a2'));
    applyEvent(s, 'approval_decided', { ...env(3), approvalId: 'a1', decision: 'deny', edited: false, by: null, reason: 'not that file' });
    applyEvent(s, 'approval_decided', { ...env(4), approvalId: 'a2', decision: 'deny', edited: false, by: 'timeout', reason: 'timeout' });
    expect(s.approvals.map((a: State) => [a.status, decisionText(a)])).toEqual([
      ['denied', 'Denied (no API key): not that file'],
      ['expired', 'Expired: no decision in time, so the call was denied'],
    ]);
  });

  it('rebuilds the same cards from a replay after a reload, each event once', () => {
    const evs: Array<[string, Record<string, unknown>]> = [
      ['approval_required', required(1, 'a1')],
      ['approval_decided', { ...env(2), approvalId: 'a1', decision: 'deny', edited: false, by: 'key-1', reason: 'no' }],
      ['approval_required', required(3, 'a2')],
    ];
    const live = createTurnState();
    for (const [t, d] of evs) applyEvent(live, t, d);
    const reloaded = createTurnState();
    for (const [t, d] of [...evs, ...evs]) applyEvent(reloaded, t, d);
    expect(reloaded.approvals).toEqual(live.approvals);
    expect(reloaded.duplicates).toBe(3);
    expect(pendingApprovals(reloaded).map((a: State) => a.approvalId)).toEqual(['a2']);
  });

  it('voids what still waits when the run pauses or ends, and keeps the decisions', () => {
    const s = createTurnState();
    applyEvent(s, 'approval_required', required(1, 'a1'));
    applyEvent(s, 'paused', { ...env(2), resumeFromPhaseIndex: 2 });
    expect(s.approvals[0].status).toBe('void');
    expect(decisionText(s.approvals[0])).toBe('No longer waiting: the run stopped before a decision');

    const t = createTurnState();
    applyEvent(t, 'approval_required', required(1, 'a1'));
    applyEvent(t, 'approval_decided', { ...env(2), approvalId: 'a1', decision: 'approve', edited: false, by: 'k' });
    applyEvent(t, 'approval_required', required(3, 'a2'));
    applyEvent(t, 'done', { ...env(4), stopReason: 'cancelled', fullContent: '' });
    expect(t.approvals.map((a: State) => a.status)).toEqual(['approved', 'void']);
  });

  it('takes the stored approval the decision route answers, and a refusal leaves the card waiting with the server message', () => {
    const s = createTurnState();
    applyEvent(s, 'approval_required', required(1, 'a1'));
    approvalSending(s, 'a1');
    expect(s.approvals[0]).toMatchObject({ sending: true, status: 'pending' });
    expect(canDecide(s.approvals[0])).toBe(false);
    expect(decisionText(s.approvals[0])).toBe('Sending…');
    approvalRefused(s, 'a1', 'Not sent: arguments: must have required property path');
    expect(s.approvals[0]).toMatchObject({ sending: false, status: 'pending', error: 'Not sent: arguments: must have required property path' });
    expect(canDecide(s.approvals[0])).toBe(true);

    approvalSending(s, 'a1');
    approvalFromRow(s, {
      approvalId: 'a1', tool: 'write_file', callId: 'call_a1', arguments: { path: 'notes.md' }, reason: 'configured', status: 'approved', decision: 'approve',
      edited: true, by: 'key-2', createdAt: '2026-11-27T13:50:00.000Z', expiresAt: '2026-11-27T14:00:00.000Z', decidedAt: '2026-11-27T13:51:00.000Z', decisionReason: null,
    });
    expect(s.approvals[0]).toMatchObject({ status: 'approved', edited: true, by: 'key-2', sending: false, error: null });
    // the event that follows on the stream agrees
    applyEvent(s, 'approval_decided', { ...env(2), approvalId: 'a1', decision: 'approve', edited: true, by: 'key-2' });
    expect(s.approvals).toHaveLength(1);
    expect(s.approvals[0]).toMatchObject({ status: 'approved', by: 'key-2' });
  });

  it('shows a stored turn with the approvals route rows (and approval steps, when kept); a finished turn waits for no one', () => {
    const s = stateFromStored({
      content: 'Done.',
      status: 'complete',
      requestId: 'r9',
      steps: [
        { type: 'tool', callId: 'k1', name: 'write_file', status: 'failed', isError: true, outcome: 'denied', phaseIndex: 2 },
        { type: 'approval', approvalId: 'a1', tool: 'write_file', callId: 'k1', arguments: { path: 'x' }, reason: 'configured', status: 'denied', by: 'key-1', decisionReason: 'no', edited: false },
        { type: 'approval', approvalId: 'a2', tool: 'write_file', callId: 'k2', arguments: { path: 'y' }, reason: 'configured', status: 'pending', edited: false },
      ],
    });
    expect(s.approvals.map((a: State) => [a.approvalId, a.status, a.by])).toEqual([
      ['a1', 'denied', 'key-1'],
      ['a2', 'void', null],
    ]);
    // a declined call is a decision, not an error step
    expect(isErrorStep(s.tools[0])).toBe(false);
    expect(outcomeLabel('denied')).toBe('declined');
    expect(outcomeLabel('approval_required')).toBe('waiting for approval');

    // rows of an unknown status change nothing but what they describe
    approvalFromRow(s, { approvalId: 'a1', status: 'bogus' });
    expect(s.approvals[0].status).toBe('denied');
  });

  it('checks edited arguments as JSON objects before anything is sent, and builds the decision body', () => {
    expect(parseEditedArguments('{"path": "b.md"}')).toEqual({ ok: true, value: { path: 'b.md' } });
    for (const bad of ['{"path": ', '[1]', 'null', '"text"', '']) {
      const r = parseEditedArguments(bad);
      expect(r.ok).toBe(false);
    }
    expect((parseEditedArguments('{') as { error: string }).error).toMatch(/^The arguments are not valid JSON/);
    expect((parseEditedArguments('[]') as { error: string }).error).toBe('The arguments must be a JSON object ({ … }).');

    expect(decisionBody('approve')).toEqual({ decision: 'approve' });
    expect(decisionBody('approve', { arguments: { path: 'b.md' } })).toEqual({ decision: 'approve', arguments: { path: 'b.md' } });
    expect(decisionBody('deny', { reason: '  wrong file ' })).toEqual({ decision: 'deny', reason: 'wrong file' });
    // arguments never go with a denial; a blank reason is left out
    expect(decisionBody('deny', { reason: '  ', arguments: { path: 'b.md' } })).toEqual({ decision: 'deny' });
  });

  it('shows arguments as pretty JSON, a model string parsed when it is JSON', () => {
    expect(prettyArguments({ a: 1 })).toBe('{\n  "a": 1\n}');
    expect(prettyArguments('{"a":1}')).toBe('{\n  "a": 1\n}');
    expect(prettyArguments('{broken')).toBe('{broken');
  });
});

describe('debug panel: tool-only calls waiting for approval', () => {
  const result = {
    mode: 'Classic',
    executions: [
      { toolName: 'list_files', args: { path: '.' }, outcome: 'success', isError: false },
      { toolName: 'write_file', args: { path: 'a.md', content: 'x' }, outcome: 'approval_required', isError: true, approval: { required: true, reason: 'configured' } },
      { toolName: 'fs__delete', args: { path: 'b' }, outcome: 'approval_required', isError: true, resultObject: { error: 'approval_required', details: { reason: 'destructive' } } },
    ],
  };

  it('lists the executions with outcome approval_required, with their arguments and why', () => {
    expect(toolOnly.waitingCalls(result)).toEqual([
      { index: 1, tool: 'write_file', arguments: { path: 'a.md', content: 'x' }, reason: 'configured' },
      { index: 2, tool: 'fs__delete', arguments: { path: 'b' }, reason: 'destructive' },
    ]);
    expect(toolOnly.waitingCalls(null)).toEqual([]);
    expect(toolOnly.waitingCalls({ executions: [{ outcome: 'approval_required' }] })).toEqual([]);
  });

  it('sends the same request again with the approved calls', () => {
    const body = { userInput: 'write it', participantIds: [], projectId: 'default', mode: 'Classic', options: {} };
    const [first] = toolOnly.waitingCalls(result);
    expect(toolOnly.withApprovedCalls(body, [first])).toEqual({ ...body, approvedCalls: [{ tool: 'write_file', arguments: { path: 'a.md', content: 'x' } }] });
  });
});
